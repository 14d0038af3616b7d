//! A small bounded map whose entries carry an expiry: remembers the result of
//! an expensive, time-independent check (a verified signature) until the
//! checked token expires, and never holds more than its capacity.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// At most `capacity` entries, each returned only while `now <= expires_at`.
pub struct ExpiringMap<K, V> {
    capacity: usize,
    entries: Mutex<HashMap<K, (V, i64)>>,
}

impl<K: Eq + Hash, V: Clone> ExpiringMap<K, V> {
    pub fn new(capacity: usize) -> ExpiringMap<K, V> {
        ExpiringMap {
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value under `key` if it has not expired at `now`; an expired one
    /// is dropped.
    pub fn get(&self, key: &K, now: i64) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(key) {
            Some((value, expires_at)) if now <= *expires_at => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers `value` until `expires_at`. When full, expired entries are
    /// dropped first, then, if none was, every entry: the map stays bounded
    /// and a flood of distinct keys only costs the checks it would skip.
    pub fn insert(&self, key: K, value: V, expires_at: i64, now: i64) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, at)| now <= *at);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (value, expires_at));
    }

    /// Forgets everything (e.g. when the keys that vouched for it change).
    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_returned_until_its_expiry_and_not_after() {
        let map = ExpiringMap::new(4);
        map.insert("a", 1, 100, 0);
        assert_eq!(map.get(&"a", 100), Some(1));
        assert_eq!(map.get(&"a", 101), None);
        assert!(map.is_empty(), "the expired entry is dropped");
    }

    #[test]
    fn the_map_never_exceeds_its_capacity() {
        let map = ExpiringMap::new(3);
        map.insert(1, (), 10, 0);
        map.insert(2, (), 50, 0);
        map.insert(3, (), 50, 0);
        // Full: the entry expired at 20 makes room.
        map.insert(4, (), 50, 20);
        assert_eq!(map.len(), 3);
        assert_eq!(map.get(&1, 20), None);
        assert_eq!(map.get(&2, 20), Some(()));
        // Full of live entries: they are dropped rather than growing.
        map.insert(5, (), 50, 20);
        assert!(map.len() <= 3);
        assert_eq!(map.get(&5, 20), Some(()));
    }
}
