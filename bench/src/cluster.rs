//! Before a run: find the master brokers, create the topic on each, and read the queues'
//! offsets consumers start from. All of it over one short-lived connection per server.

use crate::args::{Discovery, Target};
use crate::error::BenchError;
use ringmq::client::RemotingClient;
use ringmq::protocol::body::{self, ClusterInfo, PERM_READ, PERM_WRITE};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    CreateTopicRequestHeader, GetMaxOffsetRequestHeader, OffsetResponseHeader, QueueRequestHeader,
};

/// The template topic brokers create new topics from (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// A master broker to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    /// The broker name the NameServer knows it by (sent as `bname`); none when given by address.
    pub name: Option<String>,
    pub addr: String,
}

/// One queue of the topic: which broker, which queue id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueRef {
    pub broker: usize,
    pub queue_id: i32,
}

/// Every queue of the topic, broker by broker.
pub fn queues(brokers: usize, queues_per_broker: u32) -> Vec<QueueRef> {
    (0..brokers)
        .flat_map(|broker| {
            (0..queues_per_broker as i32).map(move |queue_id| QueueRef { broker, queue_id })
        })
        .collect()
}

async fn connect(addr: &str) -> Result<RemotingClient, BenchError> {
    RemotingClient::connect(addr)
        .await
        .map_err(|source| BenchError::Remoting {
            addr: addr.to_owned(),
            source,
        })
}

/// Sends `req` and returns the response when its code is SUCCESS.
async fn call(
    client: &RemotingClient,
    addr: &str,
    what: &'static str,
    req: RemotingCommand,
    target: &Target,
) -> Result<RemotingCommand, BenchError> {
    let resp = client
        .request(req, target.timeout)
        .await
        .map_err(|source| BenchError::Remoting {
            addr: addr.to_owned(),
            source,
        })?;
    if resp.code != response::SUCCESS {
        return Err(BenchError::Refused {
            what,
            addr: addr.to_owned(),
            code: resp.code,
            name: response::name(resp.code).unwrap_or("UNKNOWN"),
            remark: resp.remark.unwrap_or_default(),
        });
    }
    Ok(resp)
}

/// The master brokers to load, sorted by name.
pub async fn discover(target: &Target) -> Result<Vec<Broker>, BenchError> {
    let (addr, cluster) = match &target.discovery {
        Discovery::Brokers(addrs) => {
            return Ok(addrs
                .iter()
                .map(|addr| Broker {
                    name: None,
                    addr: addr.clone(),
                })
                .collect())
        }
        Discovery::Namesrv { addr, cluster } => (addr, cluster),
    };
    let client = connect(addr).await?;
    let req = RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO);
    let resp = call(&client, addr, "GET_BROKER_CLUSTER_INFO", req, target).await?;
    let info: ClusterInfo = body::decode(&resp.body)?;
    let brokers = masters(&info, cluster.as_deref());
    if brokers.is_empty() {
        return Err(BenchError::NoBrokers(addr.clone()));
    }
    Ok(brokers)
}

/// The masters of `cluster` (every cluster when `None`) in `info`, sorted by broker name.
fn masters(info: &ClusterInfo, cluster: Option<&str>) -> Vec<Broker> {
    let mut brokers: Vec<Broker> = info
        .broker_addr_table
        .values()
        .filter(|b| cluster.is_none_or(|c| b.cluster == c))
        .filter_map(|b| {
            Some(Broker {
                name: Some(b.broker_name.clone()),
                addr: b.master_addr()?.to_owned(),
            })
        })
        .collect();
    brokers.sort_by(|a, b| a.name.cmp(&b.name));
    brokers
}

/// Creates (or updates) the topic with `target.queues` read and write queues on every broker.
pub async fn create_topic(brokers: &[Broker], target: &Target) -> Result<(), BenchError> {
    for broker in brokers {
        let client = connect(&broker.addr).await?;
        let header = CreateTopicRequestHeader {
            topic: target.topic.clone(),
            default_topic: DEFAULT_TOPIC.to_owned(),
            read_queue_nums: target.queues as i32,
            write_queue_nums: target.queues as i32,
            perm: PERM_READ | PERM_WRITE,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: None,
            force: false,
        };
        let req = RemotingCommand::request(request::UPDATE_AND_CREATE_TOPIC).with_header(&header);
        call(
            &client,
            &broker.addr,
            "UPDATE_AND_CREATE_TOPIC",
            req,
            target,
        )
        .await?;
    }
    Ok(())
}

/// Which end of a queue to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Min,
    Max,
}

/// The min or max offset of every queue in `queues`, in the same order.
pub async fn offsets(
    brokers: &[Broker],
    queues: &[QueueRef],
    end: End,
    target: &Target,
) -> Result<Vec<i64>, BenchError> {
    let mut clients = Vec::with_capacity(brokers.len());
    for broker in brokers {
        clients.push(connect(&broker.addr).await?);
    }
    let mut offsets = Vec::with_capacity(queues.len());
    for queue in queues {
        let topic = target.topic.clone();
        let queue_id = queue.queue_id;
        let (what, req) = match end {
            End::Max => (
                "GET_MAX_OFFSET",
                RemotingCommand::request(request::GET_MAX_OFFSET).with_header(
                    &GetMaxOffsetRequestHeader {
                        topic,
                        queue_id,
                        committed: true,
                    },
                ),
            ),
            End::Min => (
                "GET_MIN_OFFSET",
                RemotingCommand::request(request::GET_MIN_OFFSET)
                    .with_header(&QueueRequestHeader { topic, queue_id }),
            ),
        };
        let addr = &brokers[queue.broker].addr;
        let resp = call(&clients[queue.broker], addr, what, req, target).await?;
        let header: OffsetResponseHeader =
            resp.decode_header()
                .map_err(|err| BenchError::BadResponse {
                    what,
                    addr: addr.clone(),
                    reason: err.to_string(),
                })?;
        offsets.push(header.offset);
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringmq::protocol::body::BrokerData;
    use std::collections::BTreeMap;

    fn broker(cluster: &str, name: &str, addrs: &[(i64, &str)]) -> BrokerData {
        BrokerData {
            broker_addrs: addrs.iter().map(|(id, a)| (*id, a.to_string())).collect(),
            broker_name: name.into(),
            cluster: cluster.into(),
            ..BrokerData::default()
        }
    }

    #[test]
    fn masters_of_the_named_cluster_only_and_never_slaves() {
        let info = ClusterInfo {
            broker_addr_table: BTreeMap::from([
                ("b".into(), broker("c1", "b", &[(0, "h:2"), (1, "h:3")])),
                ("a".into(), broker("c1", "a", &[(0, "h:1")])),
                ("s".into(), broker("c1", "s", &[(1, "h:4")])),
                ("x".into(), broker("c2", "x", &[(0, "h:5")])),
            ]),
            cluster_addr_table: BTreeMap::new(),
        };
        let addrs = |v: Vec<Broker>| v.into_iter().map(|b| b.addr).collect::<Vec<_>>();
        assert_eq!(addrs(masters(&info, Some("c1"))), ["h:1", "h:2"]);
        assert_eq!(addrs(masters(&info, None)), ["h:1", "h:2", "h:5"]);
        assert!(masters(&info, Some("nope")).is_empty());
    }

    #[test]
    fn queues_cover_every_broker_and_queue_id() {
        let q = queues(2, 3);
        assert_eq!(q.len(), 6);
        assert_eq!(
            q[0],
            QueueRef {
                broker: 0,
                queue_id: 0
            }
        );
        assert_eq!(
            q[5],
            QueueRef {
                broker: 1,
                queue_id: 2
            }
        );
    }
}
