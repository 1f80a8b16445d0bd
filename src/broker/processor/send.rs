//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.
//!
//! Split in two halves: the connection's shard checks the request, resolves (or auto-creates)
//! the topic and picks a queue when the producer left it to the broker; the queue's owner
//! shard stores the message(s) and answers (REMOTING.md §4.2).

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard_state::BrokerShard;
use crate::broker::work::Origin;
use crate::protocol::body::{TopicConfig, PERM_WRITE};
use crate::protocol::codes::{request as code, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use crate::protocol::message::record::{find_property, format_properties, property, Message};
use crate::protocol::message::{decode_batch, OffsetMsgId};
use bytes::Bytes;
use ringmq_shards::schedule::asked_delay;
use ringmq_shards::AppendResult;

/// Property the Java broker (4.9+) adds to every stored message: the cluster that stored it.
const PROPERTY_CLUSTER: &str = "CLUSTER";
/// Properties the Java broker (5.x, `AbstractSendMessageProcessor.buildMsgContext`) sets on
/// every stored message, replacing the producer's, and answers in the send response: the
/// broker's region and whether tracing is on. Consumers' trace hooks read them.
const PROPERTY_MSG_REGION: &str = "MSG_REGION";
const PROPERTY_TRACE_ON: &str = "TRACE_ON";
/// What the Java broker answers in MSG_REGION when no region is configured.
const REGION_DEFAULT: &str = "DefaultRegion";
/// TRACE_ON as the Java broker answers by default (`traceOn`): clients may trace.
const TRACE_ON: &str = "true";
/// The properties the broker sets itself, whatever the producer sent in them.
const BROKER_SET_PROPERTIES: [&str; 3] = [PROPERTY_CLUSTER, PROPERTY_MSG_REGION, PROPERTY_TRACE_ON];

impl BrokerShard {
    /// Connection-shard half: returns the owning shard and the decoded header, its queue id
    /// filled in when the producer asked the broker to choose.
    pub(crate) async fn route_send(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<(usize, SendMessageRequestHeader)> {
        let mut header = SendMessageRequestHeader::decode_from(request)?;
        self.redirect_exhausted_retry(&mut header).await?;
        if self.config().broker_permission & PERM_WRITE == 0 {
            return Err(BrokerError::NoPermission(format!(
                "the broker[{}] sending message is forbidden",
                self.config().broker_ip1
            )));
        }
        let topic = self.topic_for_send(&header).await?;
        if topic.perm & PERM_WRITE == 0 {
            return Err(BrokerError::NoPermission(format!(
                "the topic[{}] sending message is forbidden",
                header.topic
            )));
        }
        let queues = topic.write_queue_nums.max(topic.read_queue_nums);
        let queue_id = if header.queue_id < 0 {
            self.pick_queue(topic.write_queue_nums)
        } else if header.queue_id >= queues {
            return Err(BrokerError::Illegal(format!(
                "request queueId[{}] is illegal, {} Producer: {}",
                header.queue_id, header.topic, header.producer_group
            )));
        } else {
            header.queue_id
        };
        header.queue_id = queue_id;
        Ok((self.owner_of(&header.topic, queue_id), header))
    }

    /// The request for another shard to store: `request` with the queue `route_send` chose
    /// (and the topic, which a retry past its maximum changed to the DLQ).
    pub(crate) fn forwarded_send(
        request: &RemotingCommand,
        header: &SendMessageRequestHeader,
    ) -> RemotingCommand {
        let mut forwarded = request.clone();
        let (queue_key, topic_key) = match request.code {
            code::SEND_MESSAGE => ("queueId", "topic"),
            _ => ("e", "b"),
        };
        let fields = &mut forwarded.ext_fields;
        fields.insert(queue_key.to_owned(), header.queue_id.to_string());
        fields.insert(topic_key.to_owned(), header.topic.clone());
        forwarded
    }

    async fn topic_for_send(&self, header: &SendMessageRequestHeader) -> BrokerResult<TopicConfig> {
        if let Some(topic) = self.topic(&header.topic) {
            return Ok(topic);
        }
        self.create_topic_for_send(header)
            .await?
            .ok_or_else(|| BrokerError::TopicNotExist(header.topic.clone()))
    }

    /// Owner half of a send another shard routed here.
    pub(crate) async fn serve_send(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let header = SendMessageRequestHeader::decode_from(request)?;
        self.store_send(origin, request, &header).await
    }

    /// Owner half: stores the message(s) and answers as Java does. `header` is the request's,
    /// decoded once on the connection's shard when that shard owns the queue too.
    pub(crate) async fn store_send(
        &self,
        origin: Origin,
        request: &RemotingCommand,
        header: &SendMessageRequestHeader,
    ) -> BrokerResult<RemotingCommand> {
        if self.is_stopping() {
            return Err(BrokerError::ShuttingDown);
        }
        let batch = request.code == code::SEND_BATCH_MESSAGE || header.batch == Some(true);
        let properties = header.properties.as_deref().unwrap_or("");
        let messages = if batch {
            // Apache refuses a delayed batch (CommitLog.asyncPutMessages).
            if matches!(asked_delay(properties), Ok(Some(_))) {
                return Err(BrokerError::MessageIllegal(
                    "a batch cannot be delayed".into(),
                ));
            }
            self.batch_messages(origin, header, request.body.clone())?
        } else {
            self.limits().check_body(request.body.len())?;
            let mut message =
                self.message(origin, header, request.body.clone(), 0, properties, true);
            self.schedule_if_delayed(&mut message)?;
            vec![message]
        };
        let results = self.store().append_batch(&messages).await?;
        self.count_put(results.len(), results.iter().map(|r| r.wrote_bytes).sum());
        Ok(self.send_response(request, header, &messages, &results))
    }

    /// Turns a message asking for DELAY=n>0 into its SCHEDULE_TOPIC_XXXX record, stored on
    /// this shard (the owner of its real queue), which delivers it when due. Every path that
    /// stores a message a client may have delayed calls this before the append.
    pub(crate) fn schedule_if_delayed(&self, message: &mut Message) -> BrokerResult<()> {
        self.store()
            .config()
            .delay_levels
            .schedule(message)
            .map_err(|e| BrokerError::MessageIllegal(e.to_string()))?;
        Ok(())
    }

    fn batch_messages(
        &self,
        origin: Origin,
        header: &SendMessageRequestHeader,
        body: Bytes,
    ) -> BrokerResult<Vec<Message>> {
        let entries = decode_batch(body, self.limits())?;
        if entries.is_empty() {
            return Err(BrokerError::MessageIllegal("the batch is empty".into()));
        }
        entries
            .into_iter()
            .map(|entry| {
                let properties = std::str::from_utf8(&entry.properties).map_err(|_| {
                    BrokerError::MessageIllegal("batch entry properties are not UTF-8".into())
                })?;
                Ok(self.message(origin, header, entry.body, entry.flag, properties, false))
            })
            .collect()
    }

    /// One message as the store takes it; `flag` is the batch entry's (a single message's
    /// comes from the header). Sets CLUSTER, MSG_REGION and TRACE_ON, and a UNIQ_KEY when the
    /// client sent none and `add_uniq_key` (single sends only: Java stores batch entries as
    /// they came, so a consumer's msgId for an entry without one is the offsetMsgId the send
    /// returned, as the Go client's batches rely on).
    fn message(
        &self,
        origin: Origin,
        header: &SendMessageRequestHeader,
        body: Bytes,
        entry_flag: i32,
        properties: &str,
        add_uniq_key: bool,
    ) -> Message {
        let mut pairs: Vec<(&str, &str)> =
            crate::protocol::message::record::properties_iter(properties)
                .filter(|(name, _)| !BROKER_SET_PROPERTIES.contains(name))
                .collect();
        let uniq;
        if add_uniq_key && find_property(properties, property::UNIQ_KEY).is_none() {
            uniq = self.next_uniq_key();
            pairs.push((property::UNIQ_KEY, &uniq));
        }
        pairs.push((PROPERTY_CLUSTER, &self.config().broker_cluster_name));
        pairs.push((PROPERTY_MSG_REGION, REGION_DEFAULT));
        pairs.push((PROPERTY_TRACE_ON, TRACE_ON));
        let flag = if entry_flag != 0 {
            entry_flag
        } else {
            header.flag
        };
        Message {
            topic: header.topic.clone(),
            queue_id: header.queue_id,
            flag,
            sys_flag: header.sys_flag,
            born_timestamp_ms: header.born_timestamp,
            born_host: origin.peer,
            reconsume_times: header.reconsume_times.unwrap_or(0),
            prepared_transaction_offset: 0,
            body,
            properties: Bytes::from(format_properties(pairs)),
        }
    }

    /// Answers as Apache: a delayed message's queueId is the one it was sent to, its
    /// queueOffset and msgId those of its schedule record.
    fn send_response(
        &self,
        request: &RemotingCommand,
        sent: &SendMessageRequestHeader,
        messages: &[Message],
        results: &[AppendResult],
    ) -> RemotingCommand {
        let store_host = self.store_host();
        let msg_id = results
            .iter()
            .map(|r| {
                OffsetMsgId {
                    store_host,
                    commit_log_offset: r.physical_offset,
                }
                .to_string()
            })
            .collect::<Vec<_>>()
            .join(",");
        let uniq_keys = messages
            .iter()
            .filter_map(|m| {
                let props = std::str::from_utf8(&m.properties).ok()?;
                find_property(props, property::UNIQ_KEY).map(str::to_owned)
            })
            .collect::<Vec<_>>()
            .join(",");
        let header = SendMessageResponseHeader {
            msg_id,
            queue_id: sent.queue_id,
            queue_offset: results[0].queue_offset,
            transaction_id: Some(uniq_keys),
            batch_uniq_id: None,
            recall_handle: None,
            msg_region: Some(REGION_DEFAULT.to_owned()),
            trace_on: Some(TRACE_ON.to_owned()),
        };
        RemotingCommand::response_to(request, response::SUCCESS, None).with_header(&header)
    }
}
