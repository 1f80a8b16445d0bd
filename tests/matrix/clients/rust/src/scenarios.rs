//! The contract's scenarios (phase names are the contract, tests/matrix/README.md).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use rocketmq_client_rust::{ClientError, DefaultLitePullConsumer, SendResult};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_queue::MessageQueue;
use tokio::sync::Notify;

use crate::client::*;

/// Order keys of the `orderly` scenario.
const ORDER_KEYS: usize = 10;
/// Messages of the cross-client set (contract).
const CROSS_COUNT: usize = 8;
/// The client's default compression threshold (4 KiB, as Java's compressMsgBodyOverHowmuch).
pub(crate) const COMPRESS_OVER: u32 = 4 * 1024;
/// Above every body sent, so that producer never compresses.
pub(crate) const NEVER_COMPRESS: u32 = 64 * 1024 * 1024;
/// consumeTimestamp (yyyyMMddHHmmss) of the TIMESTAMP group: far ahead, so starting there
/// would get nothing, and a pass shows the reported committed offset 0 was used instead.
const FUTURE_TIMESTAMP: &str = "20991231235959";
/// At most this many messages per key lookup: more than the one each key is sent with, so
/// duplicates would show.
const QUERY_MAX_NUM: i32 = 32;
/// Key lookups cover store times 0..this (ms since the epoch): every message stored.
const QUERY_END_MS: u64 = u64::MAX / 2;
/// Poll timeout of the lite pull consumer; polls repeat until the consume deadline.
const POLL_TIMEOUT_MS: u64 = 1000;

pub async fn run(phase: &str, env: &Env, rt: &Runtime) -> Res<String> {
    match phase {
        "route" => route(env, rt).await,
        "send-sync" => send_sync(env, rt).await,
        "send-async" => send_async(env, rt).await,
        "send-oneway" => send_oneway(env, rt).await,
        "send-batch" => send_batch(env, rt).await,
        "message-props" => message_props(env, rt).await,
        "push-tag" => push_tag(env, rt).await,
        "sql92" => sql92(env, rt).await,
        "broadcast" => broadcast(env, rt).await,
        "consume-from" => consume_from(env, rt).await,
        "offsets-consumer-restart" => offsets_consumer_restart(env, rt).await,
        "offsets-broker-restart.1" => offsets_broker_restart_1(env, rt).await,
        "offsets-broker-restart.2" => offsets_broker_restart_2(env, rt).await,
        "rebalance" => rebalance(env, rt).await,
        "orderly" => orderly(env, rt).await,
        "lite-pull" => lite_pull(env, rt).await,
        "query" => query(env, rt).await,
        "request-reply" => crate::reply::request_reply(env, rt).await,
        "cross-produce" => cross_produce(env, rt).await,
        "cross-consume" => cross_consume(env, rt).await,
        "transaction" => crate::transactions::transaction(env, rt).await,
        "transaction-crash.1" => crate::transactions::crash_1(env, rt).await,
        "transaction-crash.2" => crate::transactions::crash_2(env, rt).await,
        "timer" => crate::timers::timer(env, rt).await,
        other => fail(format!("unknown phase {other}")),
    }
}

async fn route(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let queues = p
        .fetch_publish_message_queues(&env.topic)
        .await
        .ctx("route")?;
    p.shutdown().await;
    let ids: BTreeSet<i32> = queues
        .iter()
        .filter(|q| q.broker_name().as_str() == env.broker_name)
        .map(|q| q.queue_id())
        .collect();
    must(
        ids == BTreeSet::from([0, 1, 2, 3]) && queues.len() == 4,
        || format!("route: {queues:?}"),
    )?;
    Ok(format!(
        "route of {}: 4 queues on {}",
        env.topic, env.broker_name
    ))
}

/// Consumes `wants` with a fresh clustering consumer of MATRIX_GROUP and stops it.
async fn consume_all(env: &Env, rt: &Runtime, wants: &[Want]) -> Res<()> {
    let mut r = consume_exactly(rt, env, &env.topic, ConsumerSpec::new(&env.group), wants).await?;
    r.consumer.shutdown().await;
    Ok(())
}

async fn send_sync(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let wants = send_n(&p, &env.topic, "send-sync", 0, env.count).await?;
    p.shutdown().await;
    consume_all(env, rt, &wants).await?;
    Ok(format!(
        "{} sync sends SEND_OK with msgId/queue/offset, each consumed once intact",
        env.count
    ))
}

async fn send_async(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let results: Arc<Mutex<Vec<(usize, Result<SendResult, String>)>>> = Default::default();
    let done = Arc::new(Notify::new());
    let mut wants = Vec::new();
    for i in 0..env.count {
        let m = contract(&env.topic, "send-async", i, "TagA")?;
        wants.push(want_of(&m));
        let (results, done) = (results.clone(), done.clone());
        p.send_with_callback(m, move |r: Option<&SendResult>, e: Option<&ClientError>| {
            let r = match (r, e) {
                (Some(r), _) => Ok(r.clone()),
                (None, e) => Err(format!("{e:?}")),
            };
            results.lock().expect("results").push((i, r));
            done.notify_one();
        })
        .await
        .ctx("async send")?;
    }
    let all_back = async {
        while results.lock().expect("results").len() < env.count {
            done.notified().await;
        }
    };
    tokio::time::timeout(CONSUME_DEADLINE, all_back)
        .await
        .map_err(|_| Outcome::Fail("not every send callback ran".into()))?;
    p.shutdown().await;
    let mut checked = Vec::new();
    for (i, r) in results.lock().expect("results").drain(..) {
        let r = r.map_err(|e| Outcome::Fail(format!("async send {i}: {e}")))?;
        checked.push(sent(wants[i].clone(), Some(&r))?);
    }
    consume_all(env, rt, &checked).await?;
    Ok(format!(
        "{} async sends, every callback SEND_OK, each consumed once intact",
        env.count
    ))
}

async fn send_oneway(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let mut wants = Vec::new();
    for i in 0..env.count {
        let m = contract(&env.topic, "send-oneway", i, "TagA")?;
        wants.push(want_of(&m));
        p.send_oneway(m).await.ctx("oneway send")?;
    }
    p.shutdown().await;
    consume_all(env, rt, &wants).await?;
    Ok(format!(
        "{} oneway sends all consumed once intact",
        env.count
    ))
}

async fn send_batch(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let msgs = (0..env.count)
        .map(|i| contract(&env.topic, "send-batch", i, "TagA"))
        .collect::<Res<Vec<_>>>()?;
    let wants: Vec<Want> = msgs.iter().map(want_of).collect();
    let r = p
        .send_batch_with_timeout(msgs, SEND_TIMEOUT_MS)
        .await
        .ctx("batch send")?;
    p.shutdown().await;
    must(
        r.send_status == rocketmq_client_rust::SendStatus::SendOk,
        || format!("batch: {r:?}"),
    )?;
    // A batch's msgId is the comma-joined ids of its messages, in order.
    let ids: Vec<String> = r
        .msg_id
        .as_ref()
        .map(|s| s.as_str().split(',').map(String::from).collect())
        .unwrap_or_default();
    must(ids.len() == wants.len(), || {
        format!("batch returned {} ids for {}", ids.len(), wants.len())
    })?;
    let wants: Vec<Want> = wants
        .into_iter()
        .zip(ids)
        .map(|(mut w, id)| {
            w.msg_id = id;
            w
        })
        .collect();
    consume_all(env, rt, &wants).await?;
    Ok(format!(
        "one batch of {} SEND_OK, each consumed once intact with its msgId",
        env.count
    ))
}

async fn message_props(env: &Env, rt: &Runtime) -> Res<String> {
    let mut plain = rt.producer(env, NEVER_COMPRESS).await?;
    let mut zip = rt.producer(env, COMPRESS_OVER).await?;
    let bodies: [(&str, Vec<u8>, bool); 4] = [
        ("small", b"matrix-message-props-small".to_vec(), false),
        ("10k", pattern(10 * 1024), false),
        ("1m", pattern(1024 * 1024), false),
        ("compressed", b"compressible ".repeat(5000), true),
    ];
    let mut wants = Vec::new();
    for (name, body, compress) in bodies {
        let m = message(
            &env.topic,
            "TagA",
            body,
            &[format!("key-{name}"), format!("key2-{name}")],
            &[
                ("matrix-a".into(), format!("a-{name}")),
                ("matrix-b".into(), format!("b {name} with spaces")),
                ("matrix-c".into(), format!("c-{name}-ünïcode")),
            ],
        )?;
        let mut want = send(if compress { &zip } else { &plain }, m).await?;
        want.compressed = compress;
        wants.push(want);
    }
    plain.shutdown().await;
    zip.shutdown().await;
    consume_all(env, rt, &wants).await?;
    Ok("two keys, tag, 3 user properties, 10 KiB and 1 MiB bodies, one body compressed by the client: consumed byte-identical".into())
}

async fn push_tag(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let tags = ["TagA", "TagB", "TagC"];
    let mut wants = Vec::new();
    // The last 4 sends are TagB and land on all 4 queues after every TagC, so once they are
    // consumed any TagC the broker let through would have arrived too.
    let n = env.count * 3 + 4;
    for i in 0..n {
        let tag = if i < env.count * 3 {
            tags[i % 3]
        } else {
            "TagB"
        };
        let w = send(&p, contract(&env.topic, "push-tag", i, tag)?).await?;
        if tag != "TagC" {
            wants.push(w);
        }
    }
    p.shutdown().await;
    let spec = ConsumerSpec {
        sub: "TagA || TagB",
        ..ConsumerSpec::new(&env.group)
    };
    let mut r = consume_exactly(rt, env, &env.topic, spec, &wants).await?;
    r.consumer.shutdown().await;
    Ok(format!(
        "{} TagA/TagB messages each once, no TagC",
        wants.len()
    ))
}

/// Messages of the sql92 scenario.
const SQL92_COUNT: usize = 20;

/// One SQL92 selector and the indexes of the messages it must deliver.
type Sql92Case = (&'static str, &'static str, fn(usize) -> bool);

/// The Java rows' selectors (tests/java-client/src/matrix/Sql92.java), 5.x's string
/// operators included (ringmq's grammar is 5.x's).
const SQL92_CASES: [Sql92Case; 6] = [
    ("numbers", "n > 5 AND d <= 7.5", |i| {
        i % 5 != 4 && i > 5 && i <= 15
    }),
    ("missing", "n IS NULL OR n < 2", |i| i % 5 == 4 || i < 2),
    // "seven" is no int: the evaluation fails and the message does not match, TagX or not
    ("mismatch", "mix = 7 OR TAGS = 'TagX'", |i| i % 3 != 0),
    (
        "in-between",
        "s IN ('alpha-2', 'beta-3', 'beta-5') OR n NOT BETWEEN 1 AND 17",
        |i| matches!(i, 2 | 3 | 5) || (i % 5 != 4 && !(1..=17).contains(&i)),
    ),
    (
        "startswith",
        "s STARTSWITH 'alpha' AND d BETWEEN 2.0 AND 6.0",
        |i| i % 2 == 0 && (4..=12).contains(&i),
    ),
    (
        "not-contains",
        "s NOT CONTAINS '1' AND TAGS = 'TagX'",
        |i| i % 4 == 0 && !i.to_string().contains('1'),
    ),
];

/// sql92: push consumers with SQL92 selectors (a group each) get exactly their messages.
async fn sql92(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let mut sent = Vec::new();
    for i in 0..SQL92_COUNT {
        let tag = if i % 4 == 0 { "TagX" } else { "TagA" };
        let mut props = vec![
            ("matrix-index".to_owned(), i.to_string()),
            ("d".to_owned(), format!("{:.1}", i as f64 * 0.5)),
            (
                "s".to_owned(),
                format!("{}-{i}", if i % 2 == 0 { "alpha" } else { "beta" }),
            ),
            (
                "mix".to_owned(),
                if i % 3 == 0 { "seven" } else { "7" }.to_owned(),
            ),
        ];
        if i % 5 != 4 {
            props.push(("n".to_owned(), i.to_string()));
        }
        let body = format!("matrix-sql92-{i}").into_bytes();
        sent.push(
            send(
                &p,
                message(&env.topic, tag, body, &[format!("key-{i}")], &props)?,
            )
            .await?,
        );
    }
    p.shutdown().await;
    for (name, expression, wanted) in SQL92_CASES {
        let wants: Vec<Want> = sent
            .iter()
            .enumerate()
            .filter(|(i, _)| wanted(*i))
            .map(|(_, w)| w.clone())
            .collect();
        let group = format!("{}-{name}", env.group);
        let spec = ConsumerSpec {
            sql92: Some(expression),
            ..ConsumerSpec::new(&group)
        };
        let mut r = match consume_exactly(rt, env, &env.topic, spec, &wants).await {
            Ok(r) => r,
            Err(Outcome::Fail(why)) => return fail(format!("{name} ({expression}): {why}")),
        };
        r.consumer.shutdown().await;
    }
    Ok(format!(
        "{} SQL92 selectors each got exactly their messages of {SQL92_COUNT} (missing properties, int/double/string values, a type mismatch, STARTSWITH, NOT CONTAINS)",
        SQL92_CASES.len()
    ))
}

async fn broadcast(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let wants = send_n(&p, &env.topic, "broadcast", 0, env.count).await?;
    p.shutdown().await;
    let spec = || ConsumerSpec {
        broadcast: true,
        ..ConsumerSpec::new(&env.group)
    };
    let mut a = rt.consumer(env, &env.topic, spec()).await?;
    let mut b = rt.consumer(env, &env.topic, spec()).await?;
    let waited = async {
        a.inbox
            .until(wants.len(), "every message on the first")
            .await?;
        b.inbox
            .until(wants.len(), "every message on the second")
            .await?;
        check_exactly(&wants, &a.inbox.snapshot())?;
        check_exactly(&wants, &b.inbox.snapshot())
    }
    .await;
    a.consumer.shutdown().await;
    b.consumer.shutdown().await;
    waited?;
    Ok(format!("both BROADCASTING consumers got all {}", env.count))
}

async fn consume_from(env: &Env, rt: &Runtime) -> Res<String> {
    // A new group's committed offset is reported as 0 while its queue starts at 0, so the
    // client (as Java's against Apache RocketMQ) starts LAST and TIMESTAMP there too.
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let wants = send_n(&p, &env.topic, "consume-from", 0, env.count).await?;
    p.shutdown().await;
    let froms = [
        ("FIRST", ConsumeFromWhere::ConsumeFromFirstOffset),
        ("LAST", ConsumeFromWhere::ConsumeFromLastOffset),
        ("TIMESTAMP", ConsumeFromWhere::ConsumeFromTimestamp),
    ];
    for (name, from) in froms {
        let group = format!("{}-{name}", env.group);
        let spec = ConsumerSpec {
            from,
            timestamp: Some(FUTURE_TIMESTAMP.into()),
            ..ConsumerSpec::new(&group)
        };
        let mut r = consume_exactly(rt, env, &env.topic, spec, &wants).await?;
        r.consumer.shutdown().await;
    }
    Ok(format!(
        "FIRST, LAST and TIMESTAMP new groups each start at offset 0 and get all {}",
        env.count
    ))
}

/// Sends N, a consumer of MATRIX_GROUP consumes and commits them and stops; N more are sent.
async fn consumed_then_more(
    env: &Env,
    rt: &Runtime,
    scenario: &str,
) -> Res<(Vec<Want>, Vec<Want>)> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let first = send_n(&p, &env.topic, scenario, 0, env.count).await?;
    // Shutting the consumer down persists its offsets to the broker.
    consume_all(env, rt, &first).await?;
    let rest = send_n(&p, &env.topic, scenario, env.count, env.count).await?;
    p.shutdown().await;
    Ok((first, rest))
}

async fn offsets_consumer_restart(env: &Env, rt: &Runtime) -> Res<String> {
    let (_, rest) = consumed_then_more(env, rt, "offsets-consumer-restart").await?;
    consume_all(env, rt, &rest).await?;
    Ok(format!(
        "after a restart the group got exactly the {} messages not yet committed",
        env.count
    ))
}

async fn offsets_broker_restart_1(env: &Env, rt: &Runtime) -> Res<String> {
    let (first, rest) = consumed_then_more(env, rt, "offsets-broker-restart").await?;
    save(env, "first.json", &first)?;
    save(env, "rest.json", &rest)?;
    Ok(format!(
        "sent {}, consumed and committed {}",
        2 * env.count,
        env.count
    ))
}

async fn offsets_broker_restart_2(env: &Env, rt: &Runtime) -> Res<String> {
    let first: Vec<Want> = load(env, "first.json")?;
    let rest: Vec<Want> = load(env, "rest.json")?;
    consume_all(env, rt, &rest).await?;
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    for w in &first {
        let m = p
            .view_message(&env.topic, &w.msg_id)
            .await
            .ctx("view phase-1 message by msgId")?;
        must(m.body().map(|b| b.to_vec()) == Some(w.body.clone()), || {
            format!("{} has another body", w.msg_id)
        })?;
    }
    p.shutdown().await;
    Ok(format!(
        "after the broker restart the group got exactly the other {}; phase 1's {} found by msgId",
        env.count,
        first.len()
    ))
}

async fn rebalance(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let mut a = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&env.group))
        .await?;
    let mut b = rt
        .consumer(env, &env.topic, ConsumerSpec::new(&env.group))
        .await?;
    let r = rebalance_checks(env, &p, &mut a, &b).await;
    a.consumer.shutdown().await;
    b.consumer.shutdown().await;
    p.shutdown().await;
    r
}

async fn rebalance_checks(
    env: &Env,
    p: &rocketmq_client_rust::DefaultMQProducer,
    a: &mut Recorder,
    b: &Recorder,
) -> Res<String> {
    let split = || {
        let (qa, qb) = (a.inbox.assigned(), b.inbox.assigned());
        qa.len() == 2 && qb.len() == 2 && qa.is_disjoint(&qb)
    };
    wait_until("the two consumers to own 2 queues each", split).await?;
    let wants = send_n(p, &env.topic, "rebalance", 0, env.count).await?;
    wait_until("the first batch across both", || {
        a.inbox.len() + b.inbox.len() >= wants.len()
    })
    .await?;
    let (ga, gb) = (a.inbox.snapshot(), b.inbox.snapshot());
    check_exactly(&wants, &[ga.clone(), gb.clone()].concat())?;
    must(!ga.is_empty() && !gb.is_empty(), || {
        format!("split {}/{}", ga.len(), gb.len())
    })?;
    a.consumer.shutdown().await;
    wait_until("the remaining consumer to own all 4 queues", || {
        b.inbox.assigned().len() == 4
    })
    .await?;
    let before = b.inbox.len();
    let later = send_n(p, &env.topic, "rebalance", env.count, env.count).await?;
    wait_until("every later message on the remaining consumer", || {
        b.inbox.len() >= before + later.len()
    })
    .await?;
    check_exactly(&later, &b.inbox.snapshot()[before..])?;
    Ok(format!(
        "queues split 2+2, first {} split {}/{} each once; after one left the other owned 4 and got all {} later",
        env.count, ga.len(), gb.len(), env.count
    ))
}

async fn orderly(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let per_key = (env.count / 2).max(2);
    let mut wants = Vec::new();
    for i in 0..per_key * ORDER_KEYS {
        let m = contract(&env.topic, "orderly", i, "TagA")?;
        let want = want_of(&m);
        let key = i % ORDER_KEYS;
        let r = p
            .send_with_selector(
                m,
                |mqs: &[MessageQueue], _, k: &usize| mqs.get(k % mqs.len()).cloned(),
                key,
            )
            .await
            .ctx("send with selector")?;
        wants.push(sent(want, r.as_ref())?);
    }
    p.shutdown().await;
    let spec = ConsumerSpec {
        orderly: true,
        ..ConsumerSpec::new(&env.group)
    };
    let mut r = consume_exactly(rt, env, &env.topic, spec, &wants).await?;
    r.consumer.shutdown().await;
    let mut last: HashMap<usize, usize> = HashMap::new();
    for g in r.inbox.snapshot() {
        let i: usize = g
            .props
            .get("matrix-index")
            .and_then(|s| s.parse().ok())
            .unwrap_or(usize::MAX);
        let key = i % ORDER_KEYS;
        if let Some(prev) = last.insert(key, i) {
            must(prev < i, || {
                format!("order key {key}: index {i} after {prev}")
            })?;
        }
    }
    Ok(format!("{} messages over {ORDER_KEYS} keys by selector; the orderly consumer saw each key in send order", wants.len()))
}

async fn lite_pull(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let wants = send_n(&p, &env.topic, "lite-pull", 0, env.count).await?;
    p.shutdown().await;
    let c = DefaultLitePullConsumer::builder(rt.client.clone())
        .client_options(rocketmq_client_rust::ClientOptions::legacy(rt.config(env)))
        .name_server_addr(env.namesrv.clone())
        .consumer_group(env.group.clone())
        .auto_commit(false)
        .poll_timeout_millis(POLL_TIMEOUT_MS)
        .build()
        .ctx("build lite pull consumer")?;
    c.start().await.ctx("start lite pull consumer")?;
    let r = lite_pull_checks(env, &c, &wants).await;
    c.shutdown().await;
    r
}

async fn lite_pull_checks(env: &Env, c: &DefaultLitePullConsumer, wants: &[Want]) -> Res<String> {
    let queues = c
        .fetch_message_queues(&env.topic)
        .await
        .ctx("fetch queues")?;
    must(queues.len() == 4, || format!("fetched queues {queues:?}"))?;
    c.assign(queues.clone()).await.ctx("assign")?;
    let got = poll_until(c, wants.len()).await?;
    check_exactly(wants, &got)?;
    // Seek one queue back to an offset inside it: exactly its messages from there come again.
    let q = queues
        .iter()
        .max_by_key(|q| wants.iter().filter(|w| w.queue_id == q.queue_id()).count())
        .cloned()
        .ok_or(Outcome::Fail("no queue".into()))?;
    let in_q: Vec<&Got> = got.iter().filter(|g| g.queue_id == q.queue_id()).collect();
    must(in_q.len() >= 2, || {
        format!("queue {} has {} messages", q.queue_id(), in_q.len())
    })?;
    let seek_to = in_q.iter().map(|g| g.queue_offset).min().unwrap_or(0) + 1;
    c.seek(&q, seek_to).await.ctx("seek")?;
    let again = poll_until(c, in_q.len() - 1).await?;
    let mut offsets: Vec<i64> = again.iter().map(|g| g.queue_offset).collect();
    offsets.sort_unstable();
    let expect: Vec<i64> = (seek_to..seek_to + in_q.len() as i64 - 1).collect();
    must(
        offsets == expect && again.iter().all(|g| g.queue_id == q.queue_id()),
        || {
            format!(
                "after seek to {seek_to} on queue {}: got offsets {offsets:?}",
                q.queue_id()
            )
        },
    )?;
    c.commit_sync().await;
    let committed = c.committed(&q).await.ctx("committed")?;
    let end = seek_to + in_q.len() as i64 - 1;
    must(committed == end, || {
        format!("committed {committed}, expected {end}")
    })?;
    Ok(format!(
        "assigned 4 queues, polled all {}, seek to {seek_to} re-read exactly from it, commit read back as {committed}",
        wants.len()
    ))
}

/// Polls until `n` messages arrived or the consume deadline passed.
async fn poll_until(c: &DefaultLitePullConsumer, n: usize) -> Res<Vec<Got>> {
    let mut got = Vec::new();
    let start = std::time::Instant::now();
    while got.len() < n && start.elapsed() < CONSUME_DEADLINE {
        got.extend(
            c.poll_with_timeout(POLL_TIMEOUT_MS)
                .await
                .iter()
                .map(Got::of),
        );
    }
    must(got.len() >= n, || format!("polled {} of {n}", got.len()))?;
    Ok(got)
}

async fn query(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    let wants = send_n(&p, &env.topic, "query", 0, env.count.min(4)).await?;
    let r = async {
        for w in &wants {
            let m = p
                .view_message(&env.topic, &w.msg_id)
                .await
                .ctx("view by msgId")?;
            must(m.body().map(|b| b.to_vec()) == Some(w.body.clone()), || {
                format!("by msgId {}: other body", w.msg_id)
            })?;
            if !w.offset_msg_id.is_empty() {
                let m = p
                    .view_message(&env.topic, &w.offset_msg_id)
                    .await
                    .ctx("view by offsetMsgId")?;
                must(m.body().map(|b| b.to_vec()) == Some(w.body.clone()), || {
                    format!("by offsetMsgId {}: other body", w.offset_msg_id)
                })?;
            }
            let found = p
                .query_message(&env.topic, &w.keys, QUERY_MAX_NUM, 0, QUERY_END_MS)
                .await
                .ctx("query by key")?;
            let bodies: Vec<Vec<u8>> = found
                .message_list()
                .iter()
                .filter_map(|m| m.body().map(|b| b.to_vec()))
                .collect();
            must(bodies == vec![w.body.clone()], || {
                format!("key {}: {} messages found", w.keys, bodies.len())
            })?;
        }
        Ok(())
    }
    .await;
    p.shutdown().await;
    r?;
    Ok(format!(
        "{} messages found by msgId, by offsetMsgId and by key",
        wants.len()
    ))
}

fn cross_message(
    topic: &str,
    i: usize,
) -> Res<rocketmq_model::common::message::message_single::Message> {
    message(
        topic,
        "cross",
        format!("cross-{i}").into_bytes(),
        &[format!("cross-key-{i}")],
        &[("matrix-index".into(), i.to_string())],
    )
}

async fn cross_produce(env: &Env, rt: &Runtime) -> Res<String> {
    let mut p = rt.producer(env, COMPRESS_OVER).await?;
    for i in 0..CROSS_COUNT {
        send(&p, cross_message(&env.topic, i)?).await?;
    }
    p.shutdown().await;
    Ok(format!("{CROSS_COUNT} cross messages sent"))
}

async fn cross_consume(env: &Env, rt: &Runtime) -> Res<String> {
    let wants = (0..CROSS_COUNT)
        .map(|i| cross_message(&env.topic, i).map(|m| want_of(&m)))
        .collect::<Res<Vec<_>>>()?;
    consume_all(env, rt, &wants).await?;
    Ok(format!(
        "exactly the {CROSS_COUNT} messages of {}, intact",
        env.peer
    ))
}
