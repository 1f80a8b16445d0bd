//! Recently read cold spans of the commit log.
//!
//! The log is written O_DIRECT, so the page cache holds none of it; a broker reading through
//! mmap (Apache's) serves the consumers of a topic's queues, which move through the same part
//! of the log together, from pages the first of them faulted in. Without this cache each queue's
//! catch-up pull reread its own 256 KiB span from the disk and copied it out, to keep one
//! record in eight (queues interleave in the log). Spans are aligned, so the pulls of every
//! queue that falls in one find it here; the cache is small and per shard (owned by the
//! shard's log, never shared), evicting the oldest span first.
//!
//! Log bytes below the written end never change (a group commit rewrites the partial last
//! block with the same bytes before the new ones), so a cached span is never stale. Retention
//! drops the spans of the segments it removes ([`ReadCache::drop_below`]), so their memory goes
//! with them and no span of removed bytes is ever served.

use bytes::Bytes;
use std::collections::VecDeque;

/// Bytes of the spans kept per shard: sixteen 256 KiB spans, several times what the queues of
/// a topic read side by side while they catch up.
pub const READ_CACHE_BYTES_MAX: usize = 4 << 20;

#[derive(Default)]
pub(crate) struct ReadCache {
    /// (local offset of the span's first byte, its bytes), oldest first.
    spans: VecDeque<(u64, Bytes)>,
    bytes: usize,
    hits: u64,
    /// Log bytes below it were removed: spans starting there are not kept (a read of them
    /// that was in flight during the removal would otherwise add one back).
    floor: u64,
}

impl ReadCache {
    /// The `len` bytes at `local`, if one span holds all of them.
    pub(crate) fn get(&mut self, local: u64, len: usize) -> Option<Bytes> {
        let end = local + len as u64;
        let (start, span) = self
            .spans
            .iter()
            .find(|(start, span)| *start <= local && end <= start + span.len() as u64)?;
        let at = (local - start) as usize;
        self.hits += 1;
        Some(span.slice(at..at + len))
    }

    /// Keeps `span` (the bytes from `start`), dropping the oldest spans beyond the budget.
    /// A span read again from the same start (it was cut short by the written end then)
    /// replaces the old one.
    pub(crate) fn insert(&mut self, start: u64, span: Bytes) {
        debug_assert!(span.len() <= READ_CACHE_BYTES_MAX, "a span fits the cache");
        if start < self.floor {
            return;
        }
        if let Some(at) = self.spans.iter().position(|(s, _)| *s == start) {
            let (_, old) = self.spans.remove(at).expect("position is in range");
            self.bytes -= old.len();
        }
        self.bytes += span.len();
        self.spans.push_back((start, span));
        while self.bytes > READ_CACHE_BYTES_MAX {
            let (_, oldest) = self.spans.pop_front().expect("bytes are counted in spans");
            self.bytes -= oldest.len();
        }
    }

    /// Drops every span that starts below `local` (a span lies within one segment and `local`
    /// is where the first retained segment starts, so none straddles it), and keeps such
    /// spans out from now on.
    pub(crate) fn drop_below(&mut self, local: u64) {
        self.floor = self.floor.max(local);
        let bytes = &mut self.bytes;
        self.spans.retain(|(start, span)| {
            let keep = *start >= local;
            if !keep {
                *bytes -= span.len();
            }
            keep
        });
    }

    /// Bytes of the spans held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reads served from a cached span so far.
    pub(crate) fn hits(&self) -> u64 {
        self.hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_serves_what_it_holds_and_the_oldest_goes_first() {
        let mut cache = ReadCache::default();
        let span = Bytes::from((0..=255u8).collect::<Vec<_>>());
        cache.insert(1000, span);
        assert_eq!(&cache.get(1010, 4).unwrap()[..], [10, 11, 12, 13]);
        assert!(cache.get(999, 4).is_none(), "starts before the span");
        assert!(cache.get(1250, 10).is_none(), "ends after the span");
        assert_eq!(cache.hits(), 1);
        let big = READ_CACHE_BYTES_MAX / 2;
        cache.insert(10_000, Bytes::from(vec![1; big]));
        cache.insert(20_000_000, Bytes::from(vec![2; big]));
        assert!(cache.get(1010, 4).is_none(), "evicted, oldest first");
        assert!(cache.get(10_000, 1).is_some());
        assert!(cache.get(20_000_000, 1).is_some());
        cache.insert(10_000, Bytes::from(vec![3; 8]));
        assert_eq!(
            cache.spans.len(),
            2,
            "the span from 10 000 was replaced, not doubled"
        );
        assert_eq!(cache.bytes, big + 8);
    }

    #[test]
    fn spans_below_a_removal_are_dropped_and_not_taken_back() {
        let mut cache = ReadCache::default();
        cache.insert(0, Bytes::from(vec![1; 100]));
        cache.insert(4096, Bytes::from(vec![2; 100]));
        cache.insert(8192, Bytes::from(vec![3; 100]));
        cache.drop_below(8192);
        assert!(cache.get(0, 1).is_none() && cache.get(4096, 1).is_none());
        assert_eq!(&cache.get(8192, 2).unwrap()[..], [3, 3]);
        assert_eq!(cache.bytes(), 100);
        // A read of a removed segment that was in flight during the removal ends after it.
        cache.insert(4096, Bytes::from(vec![2; 100]));
        assert!(cache.get(4096, 1).is_none(), "not kept below the removal");
        assert_eq!(cache.bytes(), 100);
        cache.drop_below(100);
        assert_eq!(cache.bytes(), 100, "a lower floor changes nothing");
    }
}
