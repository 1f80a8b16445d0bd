//! Work that reached this shard through the bus: served by the owner halves of the request
//! handlers, answered through the work's own typed reply handle. Control operations go on to
//! shard 0's control pump.

use super::control::ops::ControlOp;
use super::processor::{append, offsets, pull, query, reply, runtime_info, stats, transaction};
use super::shard::Shard;
use super::work::Work;
use glommio::channels::local_channel::LocalSender;
use std::rc::Rc;

/// Serves one piece of work. `control` is the control pump's queue on shard 0, `None`
/// elsewhere: control work sent to another shard is a routing bug.
pub async fn serve(shard: Rc<Shard>, work: Work, control: Option<Rc<LocalSender<ControlOp>>>) {
    match work {
        Work::Append { append, reply } => reply.send(append::store(&shard, append).await),
        Work::Pull {
            origin,
            header,
            reply,
        } => {
            assert_owned(&shard, &header.topic, header.queue_id);
            reply.send(pull::pull(&shard, origin, *header).await)
        }
        Work::Offset { request, reply } => {
            let (topic, queue_id) = request.queue();
            assert_owned(&shard, topic, queue_id);
            reply.send(offsets::answer(&shard, request).await)
        }
        Work::ReadAt { offset, reply } => reply.send(query::read_at(&shard, offset).await),
        Work::QueryKey { query, reply } => reply.send(query::query_part(&shard, &query).await),
        Work::TopicStats { topic, reply } => {
            reply.send(stats::topic_stats_part(&shard, &topic).await)
        }
        Work::ConsumeStats { header, reply } => {
            reply.send(stats::consume_stats_part(&shard, &header).await)
        }
        Work::ConsumedBy { topic, reply } => {
            reply.send(Ok(stats::consumed_by_part(&shard, &topic)))
        }
        Work::RuntimeInfo { reply } => reply.send(runtime_info::part(&shard).await),
        Work::DropTopic { topic, reply } => {
            reply.send(shard.store().delete_topic(&topic).await.map_err(Into::into))
        }
        Work::Snapshot { snapshot, reply } => {
            shard.install_snapshot(snapshot);
            reply.send(Ok(()))
        }
        Work::NotifyIdsChanged { connection, group } => {
            shard.notify_ids_changed(connection, &group)
        }
        Work::EndTransaction { header, reply } => {
            reply.send(transaction::end(&shard, *header).await)
        }
        Work::CheckTransaction { connection, check } => {
            shard.check_transaction_state(connection, &check)
        }
        Work::PushReply {
            connection,
            push,
            reply: answer,
        } => answer.send(reply::push(&shard, connection, &push).await),
        Work::Control(op) => {
            let control = control.expect("control work is routed to shard 0 only");
            // Waits for room in the pump's queue: the callers' own bounds limit how many wait.
            if control.send(*op).await.is_err() {
                tracing::debug!("control pump gone (stopping): operation dropped");
            }
        }
    }
}

/// The queue's owner serves work about it; anything else is a routing bug.
fn assert_owned(shard: &Shard, topic: &str, queue_id: i32) {
    assert_eq!(
        shard.owner_of(topic, queue_id),
        shard.id(),
        "work about queue {topic}:{queue_id} reached a shard that does not own it"
    );
}
