//! A map bounded by the summed weight of its values, evicting the least recently used first:
//! the consume queues' page cache (weighed in bytes) and their open files (weighed 1 each).

use crate::FastMap;
use std::collections::BTreeMap;
use std::hash::Hash;

struct Slot<V> {
    value: V,
    /// When it was last used: its key in `Lru::order`.
    used: u64,
    weight: usize,
}

pub(crate) struct Lru<K, V> {
    slots: FastMap<K, Slot<V>>,
    /// Keys by last use, oldest first.
    order: BTreeMap<u64, K>,
    clock: u64,
    weight: usize,
    weight_max: usize,
    evictions: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    pub(crate) fn new(weight_max: usize) -> Self {
        Self {
            slots: FastMap::default(),
            order: BTreeMap::new(),
            clock: 0,
            weight: 0,
            weight_max,
            evictions: 0,
        }
    }

    /// The value of `key`, marked as used now.
    pub(crate) fn get(&mut self, key: &K) -> Option<&mut V> {
        let slot = self.slots.get_mut(key)?;
        self.order.remove(&slot.used);
        self.clock += 1;
        slot.used = self.clock;
        self.order.insert(self.clock, key.clone());
        Some(&mut slot.value)
    }

    /// Keeps `value` (replacing any value of `key`), then evicts the least recently used
    /// others while the total weight is above the bound; one heavier than the bound alone
    /// is not kept.
    pub(crate) fn insert(&mut self, key: K, value: V, weight: usize) {
        self.remove(&key);
        if weight > self.weight_max {
            return;
        }
        while self.weight + weight > self.weight_max {
            let (_, oldest) = self.order.pop_first().expect("weight is counted in slots");
            let slot = self.slots.remove(&oldest).expect("ordered keys are held");
            self.weight -= slot.weight;
            self.evictions += 1;
        }
        self.clock += 1;
        self.order.insert(self.clock, key.clone());
        self.weight += weight;
        let used = self.clock;
        self.slots.insert(
            key,
            Slot {
                value,
                used,
                weight,
            },
        );
    }

    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let slot = self.slots.remove(key)?;
        self.order.remove(&slot.used);
        self.weight -= slot.weight;
        Some(slot.value)
    }

    /// Summed weight of the values held.
    pub(crate) fn weight(&self) -> usize {
        self.weight
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Values evicted to stay under the bound so far.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first_and_the_weight_stays_bounded() {
        let mut lru: Lru<u32, &str> = Lru::new(10);
        lru.insert(1, "a", 4);
        lru.insert(2, "b", 4);
        assert_eq!(lru.get(&1), Some(&mut "a"), "1 is now the most recent");
        lru.insert(3, "c", 4);
        assert!(lru.get(&2).is_none(), "2 was the least recently used");
        assert_eq!((lru.len(), lru.weight(), lru.evictions()), (2, 8, 1));
        lru.insert(1, "A", 2);
        assert_eq!(lru.get(&1), Some(&mut "A"));
        assert_eq!(lru.weight(), 6);
        lru.insert(4, "too heavy", 11);
        assert!(lru.get(&4).is_none());
        assert_eq!(lru.remove(&3), Some("c"));
        assert_eq!((lru.len(), lru.weight()), (1, 2));
    }
}
