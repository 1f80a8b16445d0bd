//! `request-reply` (tests/matrix/README.md): a responder (push consumer of MATRIX_TOPIC whose
//! messages are answered with the client's `MessageUtil::create_reply_message`, sent by a
//! producer of its own) and a requester making N `request` and N/2 `request_with_callback`
//! calls. Each reply must carry the CORRELATION_ID the responder saw on its request, the
//! body made for it, and the cluster's reply topic; a request nobody answers must fail by
//! the client's timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rocketmq_client_rust::{ClientError, DefaultMQProducer, MessageUtil};
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;
use tokio::sync::mpsc;

use crate::client::*;
use crate::scenarios::NEVER_COMPRESS;

/// Bounds a request the responder answers: its pull on a loaded machine.
const ANSWERED_TIMEOUT_MS: u64 = 30_000;
/// Timeout of the request nobody answers.
const UNANSWERED_TIMEOUT_MS: u64 = 3_000;
/// What the responder puts before a request's body to make its reply's body.
const REPLY_PREFIX: &[u8] = b"reply-to-";
const PROPERTY_CORRELATION_ID: &str = "CORRELATION_ID";

/// Each request body the responder answered, with the CORRELATION_ID it carried.
type Answered = Mutex<HashMap<Vec<u8>, String>>;

/// A reply as the requester got it: body, topic, CORRELATION_ID.
type GotReply = (Vec<u8>, String, Option<String>);

pub async fn request_reply(env: &Env, rt: &Runtime) -> Res<String> {
    let mut replier = rt
        .producer_of(env, "responder-producer", NEVER_COMPRESS)
        .await?;
    let mut requester = rt.producer_of(env, "requester", NEVER_COMPRESS).await?;
    let (tap, mut requests) = mpsc::unbounded_channel();
    let mut responder = rt
        .consumer_into(
            env,
            &env.topic,
            ConsumerSpec::new(&env.group),
            Arc::new(Inbox::tapped(tap)),
        )
        .await?;
    let answered = Answered::default();
    let answer = async {
        while let Some(request) = requests.recv().await {
            answer(&replier, &request, &answered).await?;
        }
        fail::<()>("the responder's consumer stopped")
    };
    let ask = ask_all(env, &requester, &answered);
    // The responder answers until the requester is done (or fails at its first bad answer).
    let outcome = tokio::select! {
        r = answer => r.map(|()| String::new()),
        r = ask => r,
    };
    responder.consumer.shutdown().await;
    requester.shutdown().await;
    replier.shutdown().await;
    outcome
}

/// What the requester does: sync requests, callback requests, one unanswered request.
async fn ask_all(env: &Env, requester: &DefaultMQProducer, answered: &Answered) -> Res<String> {
    let reply_topic = format!("{}_REPLY_TOPIC", env.cluster);
    for i in 0..env.count {
        let request = contract(&env.topic, "request-sync", i, "TagA")?;
        let body = body_of(&request);
        let reply = requester
            .request(request, ANSWERED_TIMEOUT_MS)
            .await
            .ctx(&format!("sync request {i}"))?;
        check_reply(&body, &got_reply(reply.as_ref()), &reply_topic, answered)
            .map_err(|why| Outcome::Fail(format!("sync request {i}: {why}")))?;
    }
    let callbacks = env.count / 2;
    request_with_callbacks(env, requester, callbacks, &reply_topic, answered).await?;
    unanswered(env, requester).await?;
    Ok(format!(
        "{} sync and {callbacks} callback requests each answered by their reply (correlation, \
         body, reply topic); an unanswered request timed out",
        env.count
    ))
}

/// The responder's side: one reply per request, made by the client's helper.
async fn answer(replier: &DefaultMQProducer, request: &Message, answered: &Answered) -> Res<()> {
    let request_body = body_of(request);
    let body = [REPLY_PREFIX, request_body.as_slice()].concat();
    let reply = MessageUtil::create_reply_message(request, &body).ctx("create reply message")?;
    let correlation = property(request, PROPERTY_CORRELATION_ID)
        .ok_or_else(|| Outcome::Fail("a request arrived without CORRELATION_ID".into()))?;
    answered
        .lock()
        .expect("answered lock")
        .insert(request_body, correlation);
    send(replier, reply).await.map(|_| ())
}

/// `count` request_with_callback calls; the first callback per request with a reply or an
/// error counts.
async fn request_with_callbacks(
    env: &Env,
    requester: &DefaultMQProducer,
    count: usize,
    reply_topic: &str,
    answered: &Answered,
) -> Res<()> {
    let got: Arc<Mutex<HashMap<usize, Result<GotReply, String>>>> = Arc::default();
    let mut bodies = Vec::with_capacity(count);
    for i in 0..count {
        let request = contract(&env.topic, "request-callback", i, "TagA")?;
        bodies.push(body_of(&request));
        let got = got.clone();
        let callback = move |reply: Option<&dyn MessageTrait>, error: Option<&ClientError>| {
            let outcome = match (reply, error) {
                (Some(reply), _) => Ok(got_reply(reply)),
                (None, Some(e)) => Err(format!("{e:?}")),
                // 1.0.0 also calls back once the request's send succeeded, with neither a
                // reply nor an error (Java's send callback only marks the send ok): not
                // the answer, which comes in a later call.
                (None, None) => return,
            };
            got.lock()
                .expect("replies lock")
                .entry(i)
                .or_insert(outcome);
            notify_all();
        };
        requester
            .request_with_callback(request, callback, ANSWERED_TIMEOUT_MS)
            .await
            .ctx(&format!("callback request {i}"))?;
    }
    wait_until(&format!("{count} request callbacks"), || {
        got.lock().expect("replies lock").len() == count
    })
    .await?;
    let got = got.lock().expect("replies lock");
    for (i, body) in bodies.iter().enumerate() {
        got[&i]
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|reply| check_reply(body, reply, reply_topic, answered))
            .map_err(|why| Outcome::Fail(format!("callback request {i}: {why}")))?;
    }
    Ok(())
}

/// A request to MATRIX_TOPIC2, which nobody consumes, must fail by the client's timeout.
async fn unanswered(env: &Env, requester: &DefaultMQProducer) -> Res<()> {
    let request = contract(&env.topic2, "request-unanswered", 0, "TagA")?;
    match requester.request(request, UNANSWERED_TIMEOUT_MS).await {
        Ok(reply) => fail(format!(
            "an unanswered request got a reply: {:?}",
            got_reply(reply.as_ref())
        )),
        Err(e) if e.is(ClientError::timeout("", 0).descriptor()) => Ok(()),
        Err(e) => fail(format!(
            "an unanswered request failed, but not by its timeout: {e:?}"
        )),
    }
}

/// A reply holds to its request: the responder's body for it, the CORRELATION_ID the
/// responder saw on it, the reply topic.
fn check_reply(
    request_body: &[u8],
    (body, topic, correlation): &GotReply,
    reply_topic: &str,
    answered: &Answered,
) -> Result<(), String> {
    let want = [REPLY_PREFIX, request_body].concat();
    if *body != want {
        return Err(format!(
            "reply body {:?}, want {:?}",
            String::from_utf8_lossy(body),
            String::from_utf8_lossy(&want)
        ));
    }
    let seen = answered
        .lock()
        .expect("answered lock")
        .get(request_body)
        .cloned();
    if seen.is_none() || *correlation != seen {
        return Err(format!(
            "reply correlation {correlation:?}, the request's {seen:?}"
        ));
    }
    if topic != reply_topic {
        return Err(format!("reply topic {topic:?}, want {reply_topic:?}"));
    }
    Ok(())
}

fn got_reply(reply: &dyn MessageTrait) -> GotReply {
    (
        reply.get_body().map(|b| b.to_vec()).unwrap_or_default(),
        reply.topic().to_string(),
        property(reply, PROPERTY_CORRELATION_ID),
    )
}

fn body_of(m: &dyn MessageTrait) -> Vec<u8> {
    m.get_body().map(|b| b.to_vec()).unwrap_or_default()
}

fn property(m: &dyn MessageTrait, name: &str) -> Option<String> {
    m.get_properties()
        .iter()
        .find(|(k, _)| k.as_str() == name)
        .map(|(_, v)| v.to_string())
}
