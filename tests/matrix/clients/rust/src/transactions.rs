//! `transaction` and `transaction-crash` (tests/matrix/README.md) with the client's
//! TransactionMQProducer, on a broker checking back every second after 1 s, at most
//! MATRIX_TRANSACTION_CHECK_MAX times.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rocketmq_client_rust::{
    DefaultLitePullConsumer, LocalTransactionState, TransactionListener, TransactionMQProducer,
};
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::MessageTrait;

use crate::client::*;

/// User property naming what the producer does with a transaction (its [`Kind`]).
const KIND: &str = "matrix-txn";
/// Transactions of each kind in `transaction`.
const PER_KIND: usize = 4;
/// Halves transaction-crash.1 sends, two of each of four kinds.
const CRASH_HALVES: usize = 8;
/// Where the broker moves a half checked transactionCheckMax times (one queue).
const CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// The kinds of transaction-crash.1's halves: decided before the kill, or left UNKNOWN for the
/// check-back after it.
const CRASH_KINDS: [Kind; 4] = [
    Kind::Commit,
    Kind::Rollback,
    Kind::CheckCommit,
    Kind::CheckRollback,
];
const CRASH_STATE: &str = "transaction-crash.json";

/// What the producer answers at the send (its local transaction) and at a check-back.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Commit,
    Rollback,
    CheckCommit,
    CheckRollback,
    Never,
    /// Sent last, committed by the check-back: once it arrived, check rounds went by.
    Witness,
}

const KINDS: [(Kind, &str); 6] = [
    (Kind::Commit, "COMMIT"),
    (Kind::Rollback, "ROLLBACK"),
    (Kind::CheckCommit, "CHECK_COMMIT"),
    (Kind::CheckRollback, "CHECK_ROLLBACK"),
    (Kind::Never, "NEVER"),
    (Kind::Witness, "WITNESS"),
];

impl Kind {
    fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .unwrap_or("")
    }

    fn of(name: &str) -> Option<Kind> {
        KINDS.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    fn of_want(w: &Want) -> Option<Kind> {
        w.props
            .iter()
            .find(|(k, _)| k == KIND)
            .and_then(|(_, v)| Kind::of(v))
    }

    fn on_send(self) -> LocalTransactionState {
        match self {
            Kind::Commit => LocalTransactionState::CommitMessage,
            Kind::Rollback => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        }
    }

    fn on_check(self) -> LocalTransactionState {
        match self {
            Kind::Commit | Kind::CheckCommit | Kind::Witness => {
                LocalTransactionState::CommitMessage
            }
            Kind::Rollback | Kind::CheckRollback => LocalTransactionState::RollbackMessage,
            Kind::Never => LocalTransactionState::Unknown,
        }
    }
}

fn kind_of(msg: &dyn MessageTrait) -> Option<Kind> {
    msg.property(&KIND.into())
        .and_then(|v| Kind::of(v.as_str()))
}

/// The check-backs the producer got: TRANSACTION_CHECK_TIMES by msgId, and the messages the
/// consumer had already received when first checked (none may have).
#[derive(Default)]
struct Book {
    checks: Mutex<HashMap<String, Vec<i32>>>,
    early: Mutex<Vec<String>>,
}

impl Book {
    fn of(&self, w: &Want) -> Vec<i32> {
        let checks = self.checks.lock().expect("book lock");
        checks.get(&w.msg_id).cloned().unwrap_or_default()
    }
}

struct Listener {
    book: Arc<Book>,
    answering: bool,
    consumed: Option<Arc<Inbox>>,
}

impl TransactionListener for Listener {
    fn execute_local_transaction(
        &self,
        msg: &dyn MessageTrait,
        _: Option<&(dyn Any + Send + Sync)>,
    ) -> LocalTransactionState {
        kind_of(msg).map_or(LocalTransactionState::Unknown, Kind::on_send)
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        let got = Got::of(msg);
        let times = got
            .props
            .get("TRANSACTION_CHECK_TIMES")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let mut checks = self.book.checks.lock().expect("book lock");
        let first = !checks.contains_key(&got.msg_id);
        if first
            && self
                .consumed
                .as_ref()
                .is_some_and(|inbox| inbox.snapshot().iter().any(|g| g.msg_id == got.msg_id))
        {
            self.book
                .early
                .lock()
                .expect("book lock")
                .push(got.msg_id.clone());
        }
        checks.entry(got.msg_id).or_default().push(times);
        drop(checks);
        notify_all();
        match kind_of(msg) {
            Some(kind) if self.answering => kind.on_check(),
            _ => LocalTransactionState::Unknown,
        }
    }
}

async fn producer(env: &Env, rt: &Runtime, listener: Listener) -> Res<TransactionMQProducer> {
    let mut p = TransactionMQProducer::builder(rt.client.clone())
        .client_config(rt.config(env))
        .producer_group(format!("P_{}", env.group))
        .name_server_addr(env.namesrv.clone())
        .send_msg_timeout(SEND_TIMEOUT_MS as u32)
        .transaction_listener(listener)
        .build();
    p.start().await.ctx("start transaction producer")?;
    Ok(p)
}

/// Message `i` of `scenario`, of `kind`, sent in a transaction: what its delivery carries.
async fn send(
    p: &TransactionMQProducer,
    env: &Env,
    scenario: &str,
    i: usize,
    kind: Kind,
) -> Res<Want> {
    let mut m = contract(&env.topic, scenario, i, "TagA")?;
    m.put_user_property(KIND.into(), kind.name().into())
        .ctx("user property")?;
    let want = want_of(&m);
    let r = p
        .send_message_in_transaction::<(), _>(m, None)
        .await
        .ctx("send half")?;
    must(r.local_transaction_state == Some(kind.on_send()), || {
        format!(
            "half {i} ({kind:?}): local state {:?}",
            r.local_transaction_state
        )
    })?;
    let mut want = sent(want, r.send_result.as_ref())?;
    // committed as a new message: its own queue offset
    want.queue_id = -1;
    Ok(want)
}

/// `n` transactions of `scenario`, message i of kind kinds[i mod len].
async fn send_kinds(
    p: &TransactionMQProducer,
    env: &Env,
    scenario: &str,
    kinds: &[Kind],
    n: usize,
) -> Res<Vec<Want>> {
    let mut sent = Vec::with_capacity(n);
    for i in 0..n {
        sent.push(send(p, env, scenario, i, kinds[i % kinds.len()]).await?);
    }
    Ok(sent)
}

fn of_kind(sent: &[Want], kinds: &[Kind]) -> Vec<Want> {
    sent.iter()
        .filter(|w| Kind::of_want(w).is_some_and(|k| kinds.contains(&k)))
        .cloned()
        .collect()
}

async fn await_checks(
    book: &Book,
    what: &str,
    wants: &[Want],
    done: impl Fn(&[i32]) -> bool,
) -> Res<()> {
    wait_until(what, || wants.iter().all(|w| done(&book.of(w)))).await
}

/// The witness: sent now, committed by the check-back; returned once the consumer has it
/// and every one of `before`.
async fn witness(
    p: &TransactionMQProducer,
    env: &Env,
    inbox: &Inbox,
    scenario: &str,
    i: usize,
    before: &[Want],
) -> Res<Want> {
    let w = send(p, env, scenario, i, Kind::Witness).await?;
    let n = before.len() + 1;
    wait_until(
        "the witness, committed by the check-back, and the committed ones",
        || {
            let got = inbox.snapshot();
            before
                .iter()
                .chain([&w])
                .all(|x| got.iter().any(|g| g.body == x.body))
        },
    )
    .await?;
    inbox.until(n, "committed messages").await?;
    Ok(w)
}

/// The topic's queues hold as many messages as `committed` (a producer's max offsets), and
/// the consumer got each once, intact, and nothing else.
async fn only_committed(env: &Env, rt: &Runtime, inbox: &Inbox, committed: &[Want]) -> Res<()> {
    let mut p = rt.producer(env, crate::scenarios::COMPRESS_OVER).await?;
    let held = held_in(&mut p, &env.topic).await;
    p.shutdown().await;
    let held = held?;
    must(held == committed.len() as i64, || {
        format!(
            "the topic's queues hold {held} messages, not the {} committed",
            committed.len()
        )
    })?;
    check_exactly(committed, &inbox.snapshot())
}

/// Each of `never` is in TRANS_CHECK_MAX_TIME_TOPIC once, with its body (found by msgId: the
/// topic is the broker's, shared by every producer).
async fn discarded_once(env: &Env, rt: &Runtime, never: &[Want]) -> Res<()> {
    let c = DefaultLitePullConsumer::builder(rt.client.clone())
        .client_options(rocketmq_client_rust::ClientOptions::legacy(rt.config(env)))
        .name_server_addr(env.namesrv.clone())
        .consumer_group(format!("{}-discards", env.group))
        .auto_commit(false)
        .build()
        .ctx("build lite pull consumer")?;
    c.start().await.ctx("start lite pull consumer")?;
    let r = async {
        let queues = c
            .fetch_message_queues(CHECK_MAX_TIME_TOPIC)
            .await
            .ctx("discard queues")?;
        c.assign(queues.clone()).await.ctx("assign")?;
        // from the first offset: the topic is older than this group (every producer's
        // discards), whatever the consume-from of a new group would give
        for q in &queues {
            c.seek(q, 0).await.ctx("seek to 0")?;
        }
        let mut found: Vec<Got> = Vec::new();
        let start = std::time::Instant::now();
        while start.elapsed() < CONSUME_DEADLINE
            && !never
                .iter()
                .all(|w| found.iter().any(|g| g.msg_id == w.msg_id))
        {
            found.extend(c.poll_with_timeout(1000).await.iter().map(Got::of));
        }
        for w in never {
            let hits: Vec<&Got> = found.iter().filter(|g| g.msg_id == w.msg_id).collect();
            must(hits.len() == 1 && hits[0].body == w.body, || {
                format!(
                    "never-answered {} in {CHECK_MAX_TIME_TOPIC} {} times",
                    w.msg_id,
                    hits.len()
                )
            })?;
        }
        Ok(())
    }
    .await;
    c.shutdown().await;
    r
}

pub async fn transaction(env: &Env, rt: &Runtime) -> Res<String> {
    let check_max: usize = std::env::var("MATRIX_TRANSACTION_CHECK_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or(Outcome::Fail(
            "MATRIX_TRANSACTION_CHECK_MAX is not set".into(),
        ))?;
    let mut r = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&env.group))
        .await?;
    let book = Arc::new(Book::default());
    let listener = Listener {
        book: book.clone(),
        answering: true,
        consumed: Some(r.inbox.clone()),
    };
    let mut p = producer(env, rt, listener).await?;
    let kinds: Vec<Kind> = CRASH_KINDS.into_iter().chain([Kind::Never]).collect();
    let sent = send_kinds(&p, env, "transaction", &kinds, PER_KIND * kinds.len()).await?;
    await_checks(
        &book,
        "check-rollback ones checked",
        &of_kind(&sent, &[Kind::CheckRollback]),
        |t| !t.is_empty(),
    )
    .await?;
    let never = of_kind(&sent, &[Kind::Never]);
    await_checks(
        &book,
        "never-answered ones checked to the limit",
        &never,
        |t| t.len() >= check_max,
    )
    .await?;
    let mut committed = of_kind(&sent, &[Kind::Commit, Kind::CheckCommit]);
    committed.push(witness(&p, env, &r.inbox, "transaction", sent.len(), &committed).await?);
    let early = book.early.lock().expect("book lock").clone();
    must(early.is_empty(), || {
        format!("delivered before their first check: {early:?}")
    })?;
    for w in of_kind(&sent, &[Kind::CheckCommit, Kind::CheckRollback]) {
        must(book.of(&w).first() == Some(&1), || {
            format!("{} first checked as {:?}", w.msg_id, book.of(&w))
        })?;
    }
    for w in of_kind(&sent, &[Kind::Commit, Kind::Rollback]) {
        must(book.of(&w).is_empty(), || {
            format!(
                "{} decided at the send, checked {:?}",
                w.msg_id,
                book.of(&w)
            )
        })?;
    }
    let one_to_max: Vec<i32> = (1..=check_max as i32).collect();
    for w in &never {
        must(book.of(w) == one_to_max, || {
            format!("never-answered {} checked {:?}", w.msg_id, book.of(w))
        })?;
    }
    discarded_once(env, rt, &never).await?;
    only_committed(env, rt, &r.inbox, &committed).await?;
    r.consumer.shutdown().await;
    p.shutdown().await;
    Ok(format!(
        "of {PER_KIND} each: commit, rollback, UNKNOWN then check-back commit and rollback, never answered (checked 1..{check_max}, then in {CHECK_MAX_TIME_TOPIC}): exactly the {} committed consumed once intact, none before its check",
        committed.len()
    ))
}

pub async fn crash_1(env: &Env, rt: &Runtime) -> Res<String> {
    let mut r = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&env.group))
        .await?;
    let listener = Listener {
        book: Arc::default(),
        answering: false,
        consumed: None,
    };
    let mut p = producer(env, rt, listener).await?;
    let sent = send_kinds(&p, env, "transaction-crash", &CRASH_KINDS, CRASH_HALVES).await?;
    let committed = of_kind(&sent, &[Kind::Commit]);
    r.inbox
        .until(committed.len(), "committed before the kill")
        .await?;
    check_exactly(&committed, &r.inbox.snapshot())?;
    save(env, CRASH_STATE, &sent)?;
    r.consumer.shutdown().await;
    p.shutdown().await;
    Ok(format!(
        "{CRASH_HALVES} halves: committed, rolled back, {} left UNKNOWN for the kill",
        of_kind(&sent, &[Kind::CheckCommit, Kind::CheckRollback]).len()
    ))
}

pub async fn crash_2(env: &Env, rt: &Runtime) -> Res<String> {
    let sent: Vec<Want> = load(env, CRASH_STATE)?;
    let group2 = format!("{}_2", env.group);
    // a group of its own, from the first offset: every commit since the queues began
    let mut r = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&group2))
        .await?;
    let book = Arc::new(Book::default());
    let listener = Listener {
        book: book.clone(),
        answering: true,
        consumed: None,
    };
    let mut p = producer(env, rt, listener).await?;
    let mut committed = of_kind(&sent, &[Kind::Commit, Kind::CheckCommit]);
    // the producer sends first, as an application's would (a producer that never sent may
    // get no check from the broker)
    committed.push(
        witness(
            &p,
            env,
            &r.inbox,
            "transaction-crash",
            sent.len(),
            &committed,
        )
        .await?,
    );
    await_checks(
        &book,
        "halves undecided at the kill checked back",
        &of_kind(&sent, &[Kind::CheckCommit, Kind::CheckRollback]),
        |t| !t.is_empty(),
    )
    .await?;
    for w in of_kind(&sent, &[Kind::Commit, Kind::Rollback]) {
        must(book.of(&w).is_empty(), || {
            format!(
                "{} decided before the kill, checked {:?}",
                w.msg_id,
                book.of(&w)
            )
        })?;
    }
    only_committed(env, rt, &r.inbox, &committed).await?;
    r.consumer.shutdown().await;
    p.shutdown().await;
    Ok(format!("after the kill the undecided halves were checked back; exactly the {} committed consumed once intact, no rolled-back one", committed.len()))
}
