//! API keys: the key's secret, what a key may do.
//!
//! A key is `pst_` followed by 64 lowercase hex digits (256 random bits), a [`Secret`]: the
//! service stores only its SHA-256 hash and a short display prefix, and shows the secret once,
//! at creation.

#[cfg(doc)]
use crate::secret::Secret;
use crate::secret::{DISPLAY_HEX_LEN, secret_kind};
use crate::{Ban, Plan, RateLimits, ValidationError};

/// Where 0.1 had it.
pub use crate::secret::KeyHash;

/// What every key starts with, so that a leaked key is recognisable (e.g. by secret scanners).
pub const KEY_PREFIX: &str = "pst_";
/// How many characters of a key are kept in clear to tell keys apart in listings.
pub const DISPLAY_PREFIX_LEN: usize = KEY_PREFIX.len() + DISPLAY_HEX_LEN;
/// Longest accepted key label, in characters.
pub const MAX_LABEL_CHARS: usize = 100;

string_enum! {
    /// What a key may do.
    pub enum Scope in "scope", default ReadWrite {
        /// Everything (the default).
        ReadWrite = "read-write",
        /// Reads only: a write (`POST`) is refused with `403 insufficient_scope`.
        ReadOnly = "read-only",
    }
}

string_enum! {
    /// Where a key stands at a given time, as listings show it and filter by.
    pub enum KeyState in "state" {
        /// Authenticates (unless its secret was rotated out and the grace period is over).
        Active = "active",
        /// Past its expiry: refused like an unknown key.
        Expired = "expired",
        /// Revoked: refused like an unknown key, for good.
        Revoked = "revoked",
    }
}

impl Scope {
    /// Whether a key of this scope may write.
    pub fn may_write(self) -> bool {
        self == Self::ReadWrite
    }
}

/// What a new key is made of, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    plan: Plan,
    label: String,
    custom_limits: Option<RateLimits>,
    scope: Scope,
    expires_at: Option<i64>,
}

impl KeySpec {
    /// Enterprise keys need custom limits; other plans take their plan's limits and refuse custom
    /// ones. Labels are at most 100 characters with no control characters.
    pub fn new(
        plan: Plan,
        label: impl Into<String>,
        custom_limits: Option<RateLimits>,
    ) -> Result<Self, ValidationError> {
        let label = label.into();
        validate_label(&label)?;
        match (plan, custom_limits) {
            (Plan::Enterprise, None) => Err(ValidationError::invalid(
                "perMinute",
                "and `perDay` are required for the enterprise plan",
            )),
            (Plan::Enterprise, Some(_)) | (_, None) => Ok(Self {
                plan,
                label,
                custom_limits,
                scope: Scope::default(),
                expires_at: None,
            }),
            (_, Some(_)) => Err(ValidationError::invalid(
                "perMinute",
                "and `perDay` can only be set for the enterprise plan",
            )),
        }
    }

    /// The same spec with `scope` (read-write by default).
    pub fn with_scope(self, scope: Scope) -> Self {
        Self { scope, ..self }
    }

    /// The same spec for a key that stops working at `expires_at` (Unix seconds), which must
    /// be after `now`.
    pub fn expiring_at(self, expires_at: i64, now: i64) -> Result<Self, ValidationError> {
        if expires_at <= now {
            return Err(ValidationError::invalid(
                "expiresAt",
                "must be in the future",
            ));
        }
        if expires_at > LAST_TIME {
            return Err(ValidationError::invalid(
                "expiresAt",
                "must be before the year 10000",
            ));
        }
        Ok(Self {
            expires_at: Some(expires_at),
            ..self
        })
    }

    /// The plan.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// What the key may do.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// When the key stops working, Unix seconds; `None`: never.
    pub fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Custom limits (enterprise only).
    pub fn custom_limits(&self) -> Option<RateLimits> {
        self.custom_limits
    }
}

/// The last second of the year 9999 (Unix seconds): the latest time a key's dates may hold, as
/// RFC 3339 writes only four-digit years.
pub const LAST_TIME: i64 = 253_402_300_799;

/// Changes to a key, applied together or not at all; `None` leaves that part as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyUpdate {
    /// A new plan with its custom limits (validate them with [`KeySpec::new`] first).
    pub plan: Option<(Plan, Option<RateLimits>)>,
    /// A new scope.
    pub scope: Option<Scope>,
    /// A new label (validate it with [`validate_label`] first).
    pub label: Option<String>,
}

/// Checks a key's (or an admin token's) label: at most 100 characters, no control characters.
pub fn validate_label(label: &str) -> Result<(), ValidationError> {
    let too_long = "must be at most 100 characters long";
    ValidationError::check_text("label", label, MAX_LABEL_CHARS, too_long)
}

/// A stored API key, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Stable identifier, used by `petstore keys revoke ID`.
    pub id: i64,
    /// The first characters of the secret, to recognise it in listings.
    pub display_prefix: String,
    /// The plan.
    pub plan: Plan,
    /// A free-form description.
    pub label: String,
    /// Per-key limits (enterprise only).
    pub custom_limits: Option<RateLimits>,
    /// Creation time, Unix seconds.
    pub created_at: i64,
    /// Revocation time, Unix seconds; a revoked key authenticates nothing.
    pub revoked_at: Option<i64>,
    /// The current or most recent temporary ban, kept after it ends so repeats escalate.
    pub ban: Option<Ban>,
    /// What the key may do.
    pub scope: Scope,
    /// When the key stops working, Unix seconds; `None`: never. An expired key authenticates
    /// nothing, like an unknown one.
    pub expires_at: Option<i64>,
    /// When the key was last seen, Unix seconds (recorded at most once a minute per instance).
    pub last_used_at: Option<i64>,
    /// After a rotation: when the previous secret stops working, Unix seconds.
    pub previous_secret_until: Option<i64>,
}

impl ApiKey {
    /// The limits that apply to this key: its custom ones, else its plan's.
    pub fn limits(&self) -> RateLimits {
        self.custom_limits
            .or_else(|| self.plan.standard_limits())
            // An enterprise key without custom limits cannot be created; should one be found in
            // the database anyway, it gets the strictest plan rather than no limit at all.
            .or_else(|| Plan::Free.standard_limits())
            .expect("BUG: the free plan has standard limits")
    }

    /// Whether the key still authenticates at `now` (with its current secret).
    pub fn is_active_at(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }

    /// Active, expired or revoked, at `now`.
    pub fn state(&self, now: i64) -> KeyState {
        match (self.revoked_at, self.expires_at) {
            (Some(_), _) => KeyState::Revoked,
            (None, Some(at)) if at <= now => KeyState::Expired,
            (None, _) => KeyState::Active,
        }
    }

    /// `active`, `expired` or `revoked`, at `now`: for listings.
    pub fn state_at(&self, now: i64) -> &'static str {
        self.state(now).as_str()
    }

    /// The ban in force at `now`, if any.
    pub fn ban_at(&self, now: u64) -> Option<Ban> {
        self.ban.filter(|ban| ban.until > now)
    }
}

/// A key found by one of its secrets: the current one, or the previous one during a rotation's
/// grace period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMatch {
    /// The key.
    pub key: ApiKey,
    /// Until when (Unix seconds) the secret presented authenticates: the key's expiry, or for
    /// a rotated-out secret the end of its grace period if sooner. `None`: no end.
    pub valid_until: Option<i64>,
}

impl KeyMatch {
    /// The match of `key` by its current secret.
    pub fn current(key: ApiKey) -> Self {
        Self {
            valid_until: key.expires_at,
            key,
        }
    }

    /// The match of `key` by its previous secret, which works until `grace_until`.
    pub fn previous(key: ApiKey, grace_until: i64) -> Self {
        Self {
            valid_until: Some(key.expires_at.map_or(grace_until, |at| at.min(grace_until))),
            key,
        }
    }

    /// Whether the secret presented authenticates at `now`.
    pub fn is_valid_at(&self, now: i64) -> bool {
        self.key.revoked_at.is_none() && self.valid_until.is_none_or(|until| until > now)
    }
}

secret_kind!(
    /// The kind of an API key's secret.
    ApiKeyKind,
    /// An API key's secret.
    ApiKeySecret,
    KEY_PREFIX
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_and_writes_unless_told_otherwise() {
        assert_eq!(Scope::default(), Scope::ReadWrite);
        assert!(Scope::default().may_write());
    }

    #[test]
    fn a_generated_secret_is_well_formed_and_parses_back() {
        let secret = ApiKeySecret::from_random_bytes([0xab; 32]);
        assert_eq!(secret.expose().len(), 68);
        assert!(secret.expose().starts_with("pst_abab"));
        assert_eq!(ApiKeySecret::parse(secret.expose()), Some(secret.clone()));
        assert_eq!(secret.display_prefix(), "pst_abababab");
    }

    #[test]
    fn malformed_candidates_are_not_keys() {
        let good = ApiKeySecret::from_random_bytes([1; 32]);
        let cases = [
            String::new(),
            "pst_".into(),
            good.expose()[..67].to_owned(),
            format!("{}0", good.expose()),
            good.expose().to_uppercase(),
            good.expose().replacen("pst_", "sk_", 1),
            format!("pst_{}", "g".repeat(64)),
        ];
        for case in cases {
            assert_eq!(ApiKeySecret::parse(&case), None, "{case:?} parsed");
        }
    }

    #[test]
    fn the_stored_hash_is_the_sha256_of_the_whole_key() {
        let secret = ApiKeySecret::from_random_bytes([0xab; 32]);
        assert_eq!(
            secret.hash().as_str(),
            "ff22e6b12154a13124ac8720e205f6edc7daf525e422b93e9e95a42c307f4725"
        );
    }

    #[test]
    fn hashing_is_stable_and_distinguishes_keys() {
        let a = ApiKeySecret::from_random_bytes([1; 32]);
        let b = ApiKeySecret::from_random_bytes([2; 32]);
        // The same key read back from its text (as a request presents it) hashes alike.
        let parsed = ApiKeySecret::parse(a.expose()).expect("well formed");
        assert_eq!(parsed.hash(), a.hash());
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash().as_str().len(), 64);
        // The hash keeps none of the secret's random digits: no run of 8 of them appears in it
        // (a hash that stored or embedded the digits, even partly, would fail here).
        let digits = &a.expose()[KEY_PREFIX.len()..];
        for start in 0..=digits.len() - 8 {
            let run = &digits[start..start + 8];
            assert!(!a.hash().as_str().contains(run), "hash holds {run}");
        }
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let secret = ApiKeySecret::from_random_bytes([7; 32]);
        let shown = format!("{secret:?}");
        assert!(!shown.contains(secret.expose()), "{shown}");
    }

    #[test]
    fn plans_have_the_interface_limits() {
        let limits = |plan: Plan| plan.standard_limits().map(|l| (l.per_minute, l.per_day));
        assert_eq!(limits(Plan::Free), Some((60, 1_000)));
        assert_eq!(limits(Plan::Pro), Some((300, 10_000)));
        assert_eq!(limits(Plan::Business), Some((1_000, 100_000)));
        assert_eq!(limits(Plan::Enterprise), None);
        for plan in Plan::ALL {
            assert_eq!(plan.as_str().parse::<Plan>(), Ok(plan));
        }
        assert!("gold".parse::<Plan>().is_err());
    }

    #[test]
    fn custom_limits_belong_to_enterprise_only() {
        let custom = RateLimits::custom(5_000, 1_000_000).expect("valid");
        assert!(KeySpec::new(Plan::Enterprise, "big", Some(custom)).is_ok());
        assert!(KeySpec::new(Plan::Enterprise, "big", None).is_err());
        assert!(KeySpec::new(Plan::Pro, "pro", Some(custom)).is_err());
        assert!(KeySpec::new(Plan::Pro, "pro", None).is_ok());
    }

    #[test]
    fn inconsistent_custom_limits_are_rejected() {
        assert!(RateLimits::custom(0, 10).is_err());
        assert!(RateLimits::custom(10, 9).is_err());
        assert!(RateLimits::custom(10, 10).is_ok());
    }

    #[test]
    fn a_key_expires_and_a_rotated_out_secret_ends_with_its_grace() {
        let spec = KeySpec::new(Plan::Free, "x", None).expect("spec");
        assert_eq!(spec.scope(), Scope::ReadWrite);
        assert!(spec.clone().expiring_at(100, 100).is_err());
        let spec = spec.expiring_at(200, 100).expect("future");
        assert_eq!(spec.expires_at(), Some(200));
        let key = ApiKey {
            id: 1,
            display_prefix: "pst_00000000".into(),
            plan: Plan::Free,
            label: String::new(),
            custom_limits: None,
            created_at: 0,
            revoked_at: None,
            ban: None,
            scope: Scope::ReadOnly,
            expires_at: Some(200),
            last_used_at: None,
            previous_secret_until: Some(150),
        };
        assert!(key.is_active_at(199) && !key.is_active_at(200));
        assert_eq!(
            (key.state_at(199), key.state_at(200)),
            ("active", "expired")
        );
        let current = KeyMatch::current(key.clone());
        assert!(current.is_valid_at(199) && !current.is_valid_at(200));
        let previous = KeyMatch::previous(key.clone(), 150);
        assert!(previous.is_valid_at(149) && !previous.is_valid_at(150));
        // The grace period never outlives the key.
        assert_eq!(KeyMatch::previous(key.clone(), 500).valid_until, Some(200));
        let revoked = KeyMatch::current(ApiKey {
            revoked_at: Some(1),
            ..key
        });
        assert!(!revoked.is_valid_at(0));
        assert!(!Scope::ReadOnly.may_write() && Scope::ReadWrite.may_write());
        assert_eq!("read-only".parse::<Scope>(), Ok(Scope::ReadOnly));
    }

    #[test]
    fn labels_are_bounded_and_printable() {
        assert!(KeySpec::new(Plan::Free, "x".repeat(101), None).is_err());
        assert!(KeySpec::new(Plan::Free, "a\nb", None).is_err());
        assert!(KeySpec::new(Plan::Free, "x".repeat(100), None).is_ok());
    }

    #[test]
    fn a_key_uses_its_custom_limits_before_its_plan() {
        let mut key = ApiKey {
            id: 1,
            display_prefix: "pst_00000000".into(),
            plan: Plan::Enterprise,
            label: String::new(),
            custom_limits: Some(RateLimits {
                per_minute: 9,
                per_day: 99,
            }),
            created_at: 0,
            revoked_at: None,
            ban: Some(Ban {
                until: 100,
                level: 1,
            }),
            scope: Scope::ReadWrite,
            expires_at: None,
            last_used_at: None,
            previous_secret_until: None,
        };
        assert!(key.ban_at(99).is_some());
        assert!(key.ban_at(100).is_none());
        assert_eq!(key.limits().per_minute, 9);
        key.plan = Plan::Pro;
        key.custom_limits = None;
        assert_eq!(key.limits().per_minute, 300);
    }
}
