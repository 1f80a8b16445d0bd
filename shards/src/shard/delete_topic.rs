//! DELETE_TOPIC_IN_BROKER's storage half (Apache's `DefaultMessageStore.deleteTopics` plus
//! `cleanOffsetByTopic`): the shard drops the topic's consume queues (memory and files) and
//! consumer offsets, and remembers where its log stood, so neither the key index nor a
//! recovery scan brings the old records back. Their commit-log space is freed when their
//! segments expire. A topic created again afterwards starts at offset 0.

use super::Shard;
use crate::error::{Result, StoreError};
use crate::io::{Clock, Disk};
use crate::schedule::SCHEDULE_TOPIC;

impl<D: Disk, C: Clock> Shard<D, C> {
    /// Deletes `topic`'s data on this shard; returns how many queues it had here. Durable when
    /// it returns: the checkpoint that no longer names the queues is written first, then their
    /// files are removed (a crash in between leaves unreferenced files, overwritten if the
    /// topic comes back). Long polls on its queues are woken and wait on the new ones.
    pub async fn delete_topic(&self, topic: &str) -> Result<usize> {
        if topic == SCHEDULE_TOPIC {
            return Err(StoreError::Config(format!("{topic} is not deleted")));
        }
        // Held to the end: a persist must not write a queue file of the topic (taken out
        // meanwhile, or of its next incarnation) while these are removed.
        let _exclusive = self.persist_lock().await;
        let removed = self.queues.borrow_mut().remove_topic(topic);
        for (queue_id, queue) in &removed {
            queue.event.notify();
            // Whether journaled or not: a journal write whose checkpoint failed may hold it.
            let mut journal = self.range_journal.borrow_mut();
            journal.note_removed(topic, *queue_id);
        }
        if !removed.is_empty() {
            let end = self.log.write_pos();
            self.deleted_topics.borrow_mut().insert(topic, end)?;
        }
        self.offsets.borrow_mut().remove_topic(topic);
        self.persist_once().await?;
        for (queue_id, queue) in &removed {
            // All its files, those a crash left past the checkpoint too.
            (self.queue_store())
                .remove_files((topic, *queue_id), queue.id, None)
                .await?;
        }
        Ok(removed.len())
    }
}
