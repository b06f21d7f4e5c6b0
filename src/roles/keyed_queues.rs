//! The fan-out reader's bookkeeping: a FIFO per key, at most one entry of a key in a handler
//! at a time, ready keys served round-robin, and a count of entries handed over and not yet
//! finished (the reader's back-pressure). Pure: the reader and its workers share it under a lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

pub struct KeyedQueues<K, T> {
    /// Entries waiting per key (a key is here while it has waiting or running work).
    waiting: HashMap<K, VecDeque<T>>,
    /// Keys with an entry in a handler now.
    running: HashSet<K>,
    /// Keys with waiting entries and none running, in the order they became ready.
    ready: VecDeque<K>,
    in_flight: usize,
}

impl<K: Hash + Eq + Clone, T> Default for KeyedQueues<K, T> {
    fn default() -> Self {
        KeyedQueues { waiting: HashMap::new(), running: HashSet::new(), ready: VecDeque::new(), in_flight: 0 }
    }
}

impl<K: Hash + Eq + Clone, T> KeyedQueues<K, T> {
    /// Hand an entry over to its key's queue. True when the key became ready (wake a worker).
    pub fn offer(&mut self, key: K, item: T) -> bool {
        self.in_flight += 1;
        let queue = self.waiting.entry(key.clone()).or_default();
        queue.push_back(item);
        let became_ready = queue.len() == 1 && !self.running.contains(&key);
        if became_ready {
            self.ready.push_back(key);
        }
        became_ready
    }

    /// The next entry a worker may apply: the head of the longest-ready key's queue.
    pub fn take(&mut self) -> Option<(K, T)> {
        let key = self.ready.pop_front()?;
        let item = self.waiting.get_mut(&key).and_then(VecDeque::pop_front).expect("a ready key has an entry");
        self.running.insert(key.clone());
        Some((key, item))
    }

    /// A worker finished the entry it took for `key`. True when the key is ready again.
    pub fn finish(&mut self, key: &K) -> bool {
        self.in_flight -= 1;
        self.running.remove(key);
        let more = self.waiting.get(key).is_some_and(|q| !q.is_empty());
        if more {
            self.ready.push_back(key.clone());
        } else {
            self.waiting.remove(key);
        }
        more
    }

    /// Entries handed over and not finished (waiting or running).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Entries in handlers now.
    #[cfg(test)]
    pub fn running(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use super::KeyedQueues;

    #[test]
    fn a_key_runs_one_entry_at_a_time_in_arrival_order() {
        let mut q = KeyedQueues::default();
        assert!(q.offer(42, "42 created"));
        assert!(!q.offer(42, "42 paid"));
        assert_eq!(q.take(), Some((42, "42 created")));
        // 42 is running: its paid waits even with a worker free.
        assert_eq!(q.take(), None);
        assert!(q.finish(&42));
        assert_eq!(q.take(), Some((42, "42 paid")));
        assert!(!q.finish(&42));
        assert_eq!((q.in_flight(), q.running()), (0, 0));
    }

    #[test]
    fn other_keys_do_not_wait_for_a_slow_one() {
        let mut q = KeyedQueues::default();
        q.offer(42, "42 created");
        q.offer(42, "42 paid");
        q.offer(43, "43 created");
        assert_eq!(q.take(), Some((42, "42 created")));
        assert_eq!(q.take(), Some((43, "43 created")));
        assert_eq!(q.running(), 2);
        assert_eq!(q.in_flight(), 3);
    }

    #[test]
    fn ready_keys_are_served_round_robin() {
        let mut q = KeyedQueues::default();
        for (k, v) in [(1, "1a"), (1, "1b"), (2, "2a"), (2, "2b")] {
            q.offer(k, v);
        }
        let (k, _) = q.take().unwrap();
        q.finish(&k);
        // Key 1 went back to the tail: key 2 is next.
        assert_eq!(q.take(), Some((2, "2a")));
    }
}
