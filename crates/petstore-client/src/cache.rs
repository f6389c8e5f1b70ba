//! The answers to `GET`s kept with their entity tags, so that asking again costs nothing while
//! nothing changed: the next `GET` of the same address sends `If-None-Match`, and a `304` is
//! answered from here (the service does not count it against the key's limits, up to their
//! worth of `304`s a minute and a day).

use std::collections::HashMap;

use reqwest::Url;
use reqwest::header::HeaderValue;

/// An answer: its tag (if it had one), body and `next` link.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub(crate) etag: Option<HeaderValue>,
    pub(crate) body: Vec<u8>,
    pub(crate) next: Option<String>,
}

/// At most `capacity` answers of at most [`MAX_BODY`] bytes each, the least recently used
/// dropped first: memory stays bounded however many addresses a client reads.
#[derive(Debug)]
pub(crate) struct Validators {
    entries: HashMap<Url, (Kept, u64)>,
    capacity: usize,
    /// Counts uses: an entry's last use orders evictions.
    clock: u64,
}

/// Bodies larger than this are not kept (a page of 100 pets is about 8 KiB).
pub(crate) const MAX_BODY: usize = 256 * 1024;

impl Validators {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity,
            clock: 0,
        }
    }

    /// The answer kept for `url`, marked as just used.
    pub(crate) fn get(&mut self, url: &Url) -> Option<Kept> {
        self.clock += 1;
        let (kept, used) = self.entries.get_mut(url)?;
        *used = self.clock;
        Some(kept.clone())
    }

    /// Keeps a copy of `kept` as the answer for `url`, dropping the least recently used when
    /// full (a scan of the entries: there are few); an answer without a tag (or too large) only
    /// removes what was kept.
    pub(crate) fn put(&mut self, url: Url, kept: &Kept) {
        if self.capacity == 0 || kept.etag.is_none() || kept.body.len() > MAX_BODY {
            self.entries.remove(&url);
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&url) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(url, _)| url.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.clock += 1;
        self.entries.insert(url, (kept.clone(), self.clock));
    }

    /// Forgets the answer kept for `url` (the resource is gone).
    pub(crate) fn forget(&mut self, url: &Url) {
        self.entries.remove(url);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(tag: &str, body: usize) -> Kept {
        Kept {
            etag: Some(HeaderValue::from_str(tag).expect("a header value")),
            body: vec![b'x'; body],
            next: None,
        }
    }

    fn url(n: usize) -> Url {
        Url::parse(&format!("http://127.0.0.1/v1/pets?after={n}")).expect("a URL")
    }

    #[test]
    fn the_least_recently_used_goes_first_and_the_bound_holds() {
        let mut cache = Validators::new(3);
        for n in 0..3 {
            cache.put(url(n), &kept("\"a\"", 10));
        }
        assert!(cache.get(&url(0)).is_some(), "0 used again");
        cache.put(url(3), &kept("\"b\"", 10));
        assert!(
            cache.get(&url(1)).is_none(),
            "1 was the least recently used"
        );
        assert!(cache.get(&url(0)).is_some());
        for n in 4..100 {
            cache.put(url(n), &kept("\"c\"", 10));
        }
        assert_eq!(cache.len(), 3);
        // Too large to keep, and nothing kept at all without room.
        cache.put(url(200), &kept("\"d\"", MAX_BODY + 1));
        assert!(cache.get(&url(200)).is_none());
        let mut none = Validators::new(0);
        none.put(url(1), &kept("\"e\"", 1));
        assert_eq!(none.len(), 0);
        // An untagged answer replaces the tagged one.
        assert!(cache.get(&url(99)).is_some());
        cache.put(
            url(99),
            &Kept {
                etag: None,
                ..kept("\"f\"", 1)
            },
        );
        assert!(cache.get(&url(99)).is_none());
        // A resource gone is forgotten.
        assert!(cache.get(&url(98)).is_some());
        cache.forget(&url(98));
        assert!(cache.get(&url(98)).is_none());
    }
}
