//! Shard 0's control pump: the one task that owns the [`ControlPlane`], applies control
//! operations one at a time in arrival order (from every shard's connections, through the
//! bus), carries out their effects (install the new snapshot on every shard, notify clients,
//! register with the NameServers) and only then answers. Beside it, on shard 0: the
//! registration loop and the periodic scan for silent clients.

use super::control::ops::ControlOp;
use super::control::plane::{ClientGroups, ControlPlane, Effects, Outcome};
use super::error::BrokerResult;
use super::now_ms;
use super::registration::NamesrvLinks;
use super::shard::Shard;
use super::work::Work;
use crate::protocol::body::TopicConfigSerializeWrapper;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use ringmq_bus::ReplyTo;
use ringmq_shards::event::Event;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// Operations queued for the pump. Each waiting operation is a client request (or a shard's
/// question) that already holds a pending-call slot on its shard, so those bounds limit what
/// waits here; this one keeps the queue itself small.
pub const CONTROL_OPS_QUEUED_MAX: usize = 1024;
/// How often shard 0 looks for clients that stopped heartbeating (Java scans every 10 s and
/// drops a client silent for 120 s).
const CLIENT_SCAN_PERIOD: Duration = Duration::from_secs(10);
/// Longest an updateTopic or deleteTopic waits for its registration round before answering:
/// one registration's own bound (a NameServer that does not answer is tried again next round).
const REGISTER_WAIT_MAX: Duration = super::registration::REGISTER_TIMEOUT;

/// The topic table to register next, and its change signal.
struct Registration {
    topics: RefCell<TopicConfigSerializeWrapper>,
    changed: Event,
    /// Rounds the registration loop has begun and ended: a change made while round `begun`
    /// runs (or before the next begins) is carried by round `begun + 1`.
    begun: Cell<u64>,
    ended: Cell<u64>,
    round_ended: Event,
}

impl Registration {
    /// Resolves once the round after `begun` has ended: the NameServers have been sent what
    /// changed before it.
    async fn carried(&self, begun: u64) {
        loop {
            let seen = self.round_ended.version();
            if self.ended.get() > begun {
                return;
            }
            self.round_ended.changed(seen).await;
        }
    }
}

/// Starts the pump, the registration loop and the client scan on shard 0; returns the queue
/// the inbox hands control operations to. The tasks live as long as the executor.
pub fn start(shard: Rc<Shard>, plane: ControlPlane) -> Rc<LocalSender<ControlOp>> {
    assert_eq!(shard.id(), 0, "the control plane runs on shard 0");
    let (ops, inbox) = local_channel::new_bounded(CONTROL_OPS_QUEUED_MAX);
    let ops = Rc::new(ops);
    let registration = Rc::new(Registration {
        topics: RefCell::new(plane.topics_wrapper()),
        changed: Event::default(),
        begun: Cell::new(0),
        ended: Cell::new(0),
        round_ended: Event::default(),
    });
    glommio::spawn_local(pump(shard.clone(), plane, inbox, registration.clone())).detach();
    glommio::spawn_local(register_loop(shard, registration)).detach();
    glommio::spawn_local(scan_clients(ops.clone())).detach();
    ops
}

async fn pump(
    shard: Rc<Shard>,
    mut plane: ControlPlane,
    inbox: LocalReceiver<ControlOp>,
    registration: Rc<Registration>,
) {
    while let Some(op) = inbox.recv().await {
        apply(&shard, &mut plane, op, &registration).await;
    }
}

/// Applies one operation: table change, effects, answer.
async fn apply(shard: &Shard, plane: &mut ControlPlane, op: ControlOp, reg: &Rc<Registration>) {
    let now = now_ms();
    match op {
        ControlOp::CreateTopicForSend {
            topic,
            default_topic,
            queue_nums,
            reply,
        } => {
            let outcome = plane
                .create_topic_for_send(&topic, &default_topic, queue_nums, now)
                .await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::FindOrCreateGroup { group, reply } => {
            let outcome = plane.find_or_create_group(&group, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::CreateDlqTopic { group, reply } => {
            let outcome = plane.create_dlq_topic(&group, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::Heartbeat {
            client,
            data,
            reply,
        } => {
            let outcome = plane.heartbeat(client, data, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::UnregisterClient {
            consumer_group,
            producer_group,
            client_id,
            reply,
        } => {
            let groups = ClientGroups {
                consumer: consumer_group.as_deref(),
                producer: producer_group.as_deref(),
            };
            let outcome = plane.unregister_client(groups, &client_id);
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::ProducerChannel { group, reply } => {
            reply.send(Ok(plane.producer_channel(&group)))
        }
        ControlOp::ProducerOfClient { client_id, reply } => {
            reply.send(Ok(plane.producer_of_client(&client_id)))
        }
        ControlOp::CreateCheckMaxTimeTopic { reply } => {
            let outcome = plane.create_check_max_time_topic(now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::ConsumerIds { group, reply } => reply.send(plane.consumer_ids(&group)),
        ControlOp::ConsumerConnection { group, reply } => {
            reply.send(plane.consumer_connection(&group))
        }
        ControlOp::LockBatch { body, reply } => reply.send(Ok(plane.lock_batch(&body, now))),
        ControlOp::UnlockBatch { body, reply } => {
            plane.unlock_batch(&body);
            reply.send(Ok(()))
        }
        ControlOp::UpsertTopic { config, reply } => {
            let outcome = plane.upsert_topic(config, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::DeleteTopic { topic, reply } => {
            let outcome = plane.delete_topic(&topic, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::UpsertGroup { config, reply } => {
            let outcome = plane.upsert_group(config, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::DeleteGroup { group, reply } => {
            let outcome = plane.delete_group(&group, now).await;
            finish(shard, reg, outcome, reply).await
        }
        ControlOp::ConnectionClosed(connection) => {
            let effects = plane.connection_closed(connection);
            log_failure(carry_out(shard, reg, effects).await)
        }
        ControlOp::ExpireClients => {
            let effects = plane.expire_clients(now);
            log_failure(carry_out(shard, reg, effects).await)
        }
    }
}

/// Carries out an operation's effects, then answers it: a snapshot that could not reach
/// every shard fails the answer (the client retries; the change itself is made). A change of
/// the topic table (updateTopic, deleteTopic, a topic a send auto-creates, retry and DLQ
/// topics) is answered once the NameServers have been sent it (at most [`REGISTER_WAIT_MAX`]
/// later), as Apache registers before it answers: a client asking for the route right after
/// finds it. The pump goes on meanwhile.
async fn finish<T: Send + 'static>(
    shard: &Shard,
    reg: &Rc<Registration>,
    outcome: Outcome<BrokerResult<T>>,
    reply: ReplyTo<BrokerResult<T>>,
) {
    let registers = outcome.effects.register.is_some();
    let begun = reg.begun.get();
    let carried = carry_out(shard, reg, outcome.effects).await;
    let answer = carried.and(outcome.answer);
    if !registers {
        return reply.send(answer);
    }
    let reg = reg.clone();
    glommio::spawn_local(async move {
        let timeout = async {
            glommio::timer::Timer::new(REGISTER_WAIT_MAX).await;
        };
        futures_lite::future::or(reg.carried(begun), timeout).await;
        reply.send(answer);
    })
    .detach();
}

async fn carry_out(shard: &Shard, reg: &Registration, effects: Effects) -> BrokerResult<()> {
    if let Some(topics) = effects.register {
        *reg.topics.borrow_mut() = topics;
        reg.changed.notify();
    }
    for notify in effects.notify {
        if notify.shard == shard.id() {
            shard.notify_ids_changed(notify.connection, &notify.group);
            continue;
        }
        let work = Work::NotifyIdsChanged {
            connection: notify.connection,
            group: notify.group,
        };
        if let Err(err) = shard.bus().send(notify.shard, work) {
            // The client rebalances at its next 20-second tick anyway.
            tracing::debug!(%err, "could not notify a client on another shard");
        }
    }
    if let Some(snapshot) = effects.publish {
        shard.install_snapshot(snapshot.clone());
        for other in (0..shard.shards()).filter(|&s| s != shard.id()) {
            let snapshot = snapshot.clone();
            shard
                .ask(other, |reply| Work::Snapshot { snapshot, reply })
                .await?;
        }
    }
    // After the snapshot: no shard takes a send for the topic any more while its data goes.
    if let Some(topic) = effects.drop_topic {
        let queues = shard
            .on_every_shard(|reply| Work::DropTopic {
                topic: topic.clone(),
                reply,
            })
            .await?;
        tracing::info!(%topic, queues = queues.iter().sum::<usize>(), "topic data deleted");
    }
    Ok(())
}

fn log_failure(carried: BrokerResult<()>) {
    if let Err(err) = carried {
        tracing::warn!(%err, "could not carry out a control-plane change everywhere");
    }
}

/// Registers with the NameServers now, every registration period and whenever the topic
/// table changes. Never returns.
async fn register_loop(shard: Rc<Shard>, registration: Rc<Registration>) {
    let links = NamesrvLinks::default();
    let period = shard.config().register_period;
    loop {
        let seen = registration.changed.version();
        let topics = registration.topics.borrow().clone();
        let round = registration.begun.get() + 1;
        registration.begun.set(round);
        if let Err(err) = links.register_all(shard.config(), &topics).await {
            tracing::warn!(%err, "registration failed");
        }
        registration.ended.set(round);
        registration.round_ended.notify();
        let timer = async {
            glommio::timer::Timer::new(period).await;
        };
        futures_lite::future::or(timer, registration.changed.changed(seen)).await;
    }
}

/// Asks the pump to drop silent clients every [`CLIENT_SCAN_PERIOD`]. Never returns.
async fn scan_clients(ops: Rc<LocalSender<ControlOp>>) {
    loop {
        glommio::timer::Timer::new(CLIENT_SCAN_PERIOD).await;
        if ops.send(ControlOp::ExpireClients).await.is_err() {
            return;
        }
    }
}
