//! Plans and their rate limits, and the rate-limit arithmetic: fixed windows aligned to the UTC minute and day, the decision for one
//! request, which window the `X-RateLimit-*` headers describe, and the ban policy. Pure: the
//! caller supplies the time and the counts (from whatever store keeps them).

use serde::{Deserialize, Serialize};

use crate::ValidationError;

string_enum! {
    /// A subscription plan; it decides a key's rate limits.
    pub enum Plan in "plan" {
        /// 60 requests a minute, 1,000 a day.
        Free = "free",
        /// 300 requests a minute, 10,000 a day.
        Pro = "pro",
        /// 1,000 requests a minute, 100,000 a day.
        Business = "business",
        /// Limits set per key.
        Enterprise = "enterprise",
    }
}

impl Plan {
    /// The limits of the plan; `None` for Enterprise, whose limits are set per key.
    pub fn standard_limits(self) -> Option<RateLimits> {
        let (per_minute, per_day) = match self {
            Self::Free => (60, 1_000),
            Self::Pro => (300, 10_000),
            Self::Business => (1_000, 100_000),
            Self::Enterprise => return None,
        };
        Some(RateLimits {
            per_minute,
            per_day,
        })
    }
}

/// Requests allowed per fixed UTC minute and per fixed UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimits {
    /// Requests per minute.
    pub per_minute: u32,
    /// Requests per day.
    pub per_day: u32,
}

impl RateLimits {
    /// Custom limits: both at least 1, and a day allows at least one minute's worth.
    pub fn custom(per_minute: u32, per_day: u32) -> Result<Self, ValidationError> {
        if per_minute == 0 {
            return Err(ValidationError::invalid("perMinute", "must be at least 1"));
        }
        if per_day < per_minute {
            return Err(ValidationError::invalid(
                "perDay",
                "must be at least the per-minute limit",
            ));
        }
        Ok(Self {
            per_minute,
            per_day,
        })
    }
}

impl RateLimits {
    /// How many requests answered `304 Not Modified` are taken back from the counts (free
    /// revalidations, GitHub's rule): as many a minute as the per-minute limit, and a day as
    /// the per-day limit. Past them a `304` counts like any answer, so a client sending nothing
    /// but conditional requests that match gets at most twice its limits' worth of answers.
    pub const fn free_revalidations(self) -> RateLimits {
        self
    }
}

/// `GET /rate_limit`: a caller's standing, read without spending a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RateLimitStatus {
    /// The key's plan.
    pub plan: Plan,
    /// The current UTC minute.
    pub minute: WindowStatus,
    /// The current UTC day.
    pub day: WindowStatus,
}

/// One window of a rate limit, as `GET /rate_limit` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WindowStatus {
    /// Requests allowed in the window.
    #[cfg_attr(feature = "openapi", schema(examples(60)))]
    pub limit: u32,
    /// Requests left in it.
    #[cfg_attr(feature = "openapi", schema(examples(59)))]
    pub remaining: u32,
    /// Unix time (seconds) at which it resets.
    #[cfg_attr(feature = "openapi", schema(examples(1_795_393_020_u64)))]
    pub reset: u64,
}

impl From<&WindowUsage> for WindowStatus {
    fn from(usage: &WindowUsage) -> Self {
        Self {
            limit: usage.limit,
            remaining: usage.remaining(),
            reset: usage.reset_at,
        }
    }
}

/// A fixed, aligned counting window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Window {
    /// `[hh:mm:00, hh:mm+1:00)` UTC.
    Minute,
    /// `[00:00:00, 24:00:00)` UTC.
    Day,
}

impl Window {
    /// Both windows, shortest first.
    pub const ALL: [Window; 2] = [Self::Minute, Self::Day];

    /// Length in seconds.
    pub const fn seconds(self) -> u64 {
        match self {
            Self::Minute => 60,
            Self::Day => 86_400,
        }
    }

    /// Which window `now` (Unix seconds) falls in; windows of one kind are numbered from 1970.
    pub const fn index(self, now: u64) -> u64 {
        now / self.seconds()
    }

    /// The Unix time at which the window holding `now` ends and a fresh one starts.
    pub const fn reset_at(self, now: u64) -> u64 {
        (self.index(now) + 1) * self.seconds()
    }

    /// The policy name used in the `RateLimit-Policy` and `RateLimit` fields.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Day => "day",
        }
    }
}

/// What a counter store answers for one request: whether it was counted (both windows had room),
/// the counts after it, and how many requests were refused in the current minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// The request fitted in both windows and was counted in both.
    pub allowed: bool,
    /// Requests counted in the current minute.
    pub minute_used: u32,
    /// Requests counted in the current day.
    pub day_used: u32,
    /// Requests refused in the current minute, this one included when refused.
    pub rejected: u32,
}

/// One window's state after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowUsage {
    /// Which window.
    pub window: Window,
    /// Requests allowed in it.
    pub limit: u32,
    /// Requests counted in it.
    pub used: u32,
    /// When it resets, Unix seconds.
    pub reset_at: u64,
}

impl WindowUsage {
    /// Requests left.
    pub fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.used)
    }
}

/// The verdict on one request, with both windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Serve it (`true`) or answer 429.
    pub allowed: bool,
    /// The minute window.
    pub minute: WindowUsage,
    /// The day window.
    pub day: WindowUsage,
    /// Requests refused in the current minute.
    pub rejected: u32,
}

impl RateDecision {
    /// Interprets a store's counts under `limits` at `now`.
    pub fn new(counts: Counts, limits: RateLimits, now: u64) -> Self {
        Self {
            allowed: counts.allowed,
            minute: WindowUsage {
                window: Window::Minute,
                limit: limits.per_minute,
                used: counts.minute_used,
                reset_at: Window::Minute.reset_at(now),
            },
            day: WindowUsage {
                window: Window::Day,
                limit: limits.per_day,
                used: counts.day_used,
                reset_at: Window::Day.reset_at(now),
            },
            rejected: counts.rejected,
        }
    }

    /// The decision once its request is taken back from both windows (a free revalidation).
    pub fn taken_back(mut self) -> Self {
        self.minute.used = self.minute.used.saturating_sub(1);
        self.day.used = self.day.used.saturating_sub(1);
        self
    }

    /// The window closest to exhaustion, which `X-RateLimit-*` describe: the one with the fewest
    /// requests remaining; on a tie, the one that resets later (the longer wait is the truth).
    pub fn binding(&self) -> &WindowUsage {
        if self.day.remaining() <= self.minute.remaining() {
            &self.day
        } else {
            &self.minute
        }
    }

    /// Whole seconds until a refused request can succeed: until every exhausted window has
    /// reset (at least 1). Zero for an allowed request.
    pub fn retry_after(&self, now: u64) -> u64 {
        if self.allowed {
            return 0;
        }
        [self.minute, self.day]
            .iter()
            .filter(|w| w.remaining() == 0)
            .map(|w| w.reset_at.saturating_sub(now))
            .max()
            .unwrap_or(1)
            .max(1)
    }
}

/// When and for how long a client that keeps sending after its 429s is banned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BanPolicy {
    /// Refused requests tolerated in one minute; one more starts a ban. Zero disables bans.
    pub threshold: u32,
    /// Length of a first ban, seconds.
    pub base_seconds: u64,
    /// Longest ban, seconds.
    pub max_seconds: u64,
    /// A client with no ban for this long starts again from a first ban, seconds.
    pub forgive_after_seconds: u64,
}

impl Default for BanPolicy {
    /// 60 refused requests in a minute (a whole free-plan minute of ignored 429s), then 5 minutes,
    /// doubling on each repeat up to 24 hours; forgotten after 24 hours without a ban.
    fn default() -> Self {
        Self {
            threshold: 60,
            base_seconds: 300,
            max_seconds: 86_400,
            forgive_after_seconds: 86_400,
        }
    }
}

/// A ban in force: until when, and how many bans in a row it is (1 for a first ban).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ban {
    /// End of the ban, Unix seconds.
    pub until: u64,
    /// 1 for a first ban, 2 for the next, ...
    pub level: u32,
}

impl BanPolicy {
    /// Whether a decision with this many refusals in the minute starts a ban.
    pub fn triggers(&self, decision: &RateDecision) -> bool {
        self.threshold > 0 && !decision.allowed && decision.rejected > self.threshold
    }

    /// The ban to impose at `now`, given the previous one (if any): escalates while the client
    /// keeps offending, and starts over after `forgive_after_seconds` without a ban.
    pub fn next_ban(&self, previous: Option<Ban>, now: u64) -> Ban {
        let level = match previous {
            Some(ban) if now < ban.until.saturating_add(self.forgive_after_seconds) => {
                ban.level.saturating_add(1)
            }
            _ => 1,
        };
        let doublings = (level - 1).min(32);
        let seconds = self
            .base_seconds
            .saturating_mul(1u64 << doublings)
            .min(self.max_seconds)
            .max(1);
        Ban {
            until: now.saturating_add(seconds),
            level,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FREE: RateLimits = RateLimits {
        per_minute: 60,
        per_day: 1_000,
    };
    // 2026-11-21T12:34:56Z
    const NOW: u64 = 1_795_264_496;

    fn decision(allowed: bool, minute_used: u32, day_used: u32) -> RateDecision {
        let counts = Counts {
            allowed,
            minute_used,
            day_used,
            rejected: u32::from(!allowed),
        };
        RateDecision::new(counts, FREE, NOW)
    }

    #[test]
    fn windows_are_aligned_to_the_utc_minute_and_day() {
        assert_eq!(Window::Minute.reset_at(NOW), NOW - 56 + 60);
        assert_eq!(
            Window::Minute.reset_at(NOW - 56),
            NOW + 4,
            "at :00 the window just began"
        );
        assert_eq!(
            Window::Minute.reset_at(NOW + 3),
            NOW + 4,
            "the last second of the minute"
        );
        assert_eq!(
            Window::Minute.index(NOW + 3) + 1,
            Window::Minute.index(NOW + 4)
        );
        let midnight = NOW - (12 * 3600 + 34 * 60 + 56);
        assert_eq!(Window::Day.reset_at(NOW), midnight + 86_400);
        assert_eq!(
            Window::Day.index(midnight),
            Window::Day.index(midnight + 86_399)
        );
        assert_ne!(
            Window::Day.index(midnight),
            Window::Day.index(midnight + 86_400)
        );
    }

    #[test]
    fn the_binding_window_has_the_fewest_remaining() {
        assert_eq!(decision(true, 59, 100).binding().window, Window::Minute);
        assert_eq!(decision(true, 1, 999).binding().window, Window::Day);
        assert_eq!(decision(true, 10, 950).binding().remaining(), 50);
        // 10 left in both: the day, which resets later.
        assert_eq!(decision(true, 50, 990).binding().window, Window::Day);
    }

    #[test]
    fn retry_after_runs_to_the_reset_of_the_exhausted_window() {
        assert_eq!(decision(true, 1, 1).retry_after(NOW), 0);
        assert_eq!(
            decision(false, 60, 100).retry_after(NOW),
            4,
            "until the next minute"
        );
        let day_reset = Window::Day.reset_at(NOW) - NOW;
        assert_eq!(decision(false, 10, 1_000).retry_after(NOW), day_reset);
        assert_eq!(
            decision(false, 60, 1_000).retry_after(NOW),
            day_reset,
            "both: the later"
        );
    }

    #[test]
    fn a_ban_starts_only_beyond_the_threshold() {
        let policy = BanPolicy::default();
        let mut refused = decision(false, 60, 100);
        refused.rejected = 60;
        assert!(!policy.triggers(&refused));
        refused.rejected = 61;
        assert!(policy.triggers(&refused));
        assert!(!policy.triggers(&decision(true, 1, 1)));
        let off = BanPolicy {
            threshold: 0,
            ..policy
        };
        assert!(!off.triggers(&refused));
    }

    #[test]
    fn bans_escalate_and_are_forgiven() {
        let policy = BanPolicy::default();
        let first = policy.next_ban(None, NOW);
        assert_eq!(
            first,
            Ban {
                until: NOW + 300,
                level: 1
            }
        );
        let second = policy.next_ban(Some(first), first.until + 10);
        assert_eq!(second.level, 2);
        assert_eq!(second.until - (first.until + 10), 600);
        let mut ban = second;
        for _ in 0..20 {
            ban = policy.next_ban(Some(ban), ban.until);
        }
        let before = ban;
        ban = policy.next_ban(Some(before), before.until);
        assert_eq!(ban.until - before.until, 86_400, "capped at a day");
        let later = ban.until + policy.forgive_after_seconds;
        assert_eq!(
            policy.next_ban(Some(ban), later).level,
            1,
            "forgiven after a quiet day"
        );
    }
}
