//! `timer` (tests/matrix/README.md): 5.x timer messages, as the client's
//! `set_delay_time_sec` / `set_deliver_time_ms` / `set_delay_time_ms` write them.

use std::time::{SystemTime, UNIX_EPOCH};

use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;

use crate::client::*;

/// Timers per delay.
const PER_DELAY: usize = 3;
/// The far timer's delay: never due while the phase runs.
const FAR_MS: u64 = 3_600_000;
/// Latest arrival accepted after a timer's time: the broker's 1 s precision slot plus a loaded
/// host's long-poll wake-up; a timer held a slot or wheel round too long is far later. The
/// measured error is on the RESULT line.
const LATE_MAX_MS: i64 = 10_000;

/// How a timer is asked for: the setter and the delay.
#[derive(Clone, Copy)]
enum Delay {
    Sec(u64),
    DeliverAt(u64),
    Ms(u64),
}

impl Delay {
    fn ms(self) -> u64 {
        match self {
            Delay::Sec(s) => s * 1000,
            Delay::DeliverAt(ms) | Delay::Ms(ms) => ms,
        }
    }

    fn apply(self, m: &mut Message, now: u64) {
        match self {
            Delay::Sec(s) => m.set_delay_time_sec(s),
            Delay::DeliverAt(ms) => m.set_deliver_time_ms(now + ms),
            Delay::Ms(ms) => m.set_delay_time_ms(ms),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A timer sent: earliest possible arrival, and its time by the send's answer.
struct Timed {
    want: Want,
    earliest_ms: u64,
    due_ms: u64,
}

async fn send(p: &DefaultMQProducer, env: &Env, i: usize, delay: Delay) -> Res<Timed> {
    let mut m = contract(&env.topic, "timer", i, "TagA")?;
    let start = now_ms();
    delay.apply(&mut m, start);
    let mut want = send_timer(p, m).await?;
    let answered = now_ms();
    // delivered as a new message: its own queue offset
    want.queue_id = -1;
    let from = if matches!(delay, Delay::DeliverAt(_)) {
        start
    } else {
        answered
    };
    Ok(Timed {
        want,
        earliest_ms: start + delay.ms(),
        due_ms: from + delay.ms(),
    })
}

/// `send` without the timer properties in the expectation (the delivered copy keeps them or
/// not, as the broker's own bookkeeping goes).
async fn send_timer(p: &DefaultMQProducer, m: Message) -> Res<Want> {
    let mut want = want_of(&m);
    want.props.retain(|(k, _)| !k.starts_with("TIMER_"));
    let r = p
        .send_with_timeout(m, SEND_TIMEOUT_MS)
        .await
        .ctx("send timer")?;
    sent(want, r.as_ref())
}

pub async fn timer(env: &Env, rt: &Runtime) -> Res<String> {
    let mut r = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&env.group))
        .await?;
    let mut p = rt.producer(env, crate::scenarios::COMPRESS_OVER).await?;
    let first = crate::client::send(&p, contract(&env.topic, "timer", 0, "TagA")?).await?;
    r.inbox.until(1, "a plain message first").await?;
    let mut due = Vec::new();
    let mut i = 1;
    for delay in [Delay::Sec(1), Delay::DeliverAt(5_000), Delay::Ms(30_000)] {
        for _ in 0..PER_DELAY {
            due.push(send(&p, env, i, delay).await?);
            i += 1;
        }
    }
    let far = send(&p, env, i, Delay::DeliverAt(FAR_MS)).await?;
    r.inbox
        .until(1 + due.len(), "the 1 s, 5 s and 30 s timers")
        .await?;
    // arrival times: the consumer's copy is taken when the listener runs
    let arrivals = r.inbox.arrivals();
    let mut errors = Vec::new();
    let mut early = Vec::new();
    for t in &due {
        let at = arrivals
            .iter()
            .find(|(b, _)| *b == t.want.body)
            .map(|(_, at)| *at)
            .unwrap_or(u64::MAX);
        if at < t.earliest_ms {
            early.push(format!("{} {} ms early", t.want.msg_id, t.earliest_ms - at));
        }
        errors.push(at as i64 - t.due_ms as i64);
    }
    must(early.is_empty(), || {
        format!("timers delivered before their time: {early:?}")
    })?;
    errors.sort_unstable();
    let rank = |pct: usize| errors[(pct * errors.len()).div_ceil(100).max(1) - 1];
    let measured = format!(
        "p50 {} ms, p90 {} ms, max {} ms (min {} ms)",
        rank(50),
        rank(90),
        errors[errors.len() - 1],
        errors[0]
    );
    must(errors.iter().all(|e| *e <= LATE_MAX_MS), || {
        format!("a timer more than {LATE_MAX_MS} ms late: {measured}")
    })?;
    let mut wants = vec![first];
    wants.extend(due.iter().map(|t| t.want.clone()));
    check_exactly(&wants, &r.inbox.snapshot())?;
    let held = held_in(&mut p, &env.topic).await?;
    must(held == wants.len() as i64, || {
        format!(
            "the topic's queues hold {held}, not {} (the far timer in none)",
            wants.len()
        )
    })?;
    must(
        !r.inbox.snapshot().iter().any(|g| g.body == far.want.body),
        || "the timer an hour ahead arrived".into(),
    )?;
    r.consumer.shutdown().await;
    p.shutdown().await;
    Ok(format!("{} timers at 1 s, 5 s, 30 s each once intact, none early, the one an hour ahead held; delivery error {measured}", due.len()))
}
