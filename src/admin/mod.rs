//! `ringmq admin`: mqadmin-like commands speaking the remoting protocol to any NameServer
//! (ringmq's or Apache RocketMQ's), printing readable tables.

mod consumer;
mod format;
mod message;
mod rpc;
mod table;
mod topic;

pub use consumer::{render_consumer_connection, render_consumer_progress};
pub use message::{render_key_query, render_message, QUERY_MAX_NUM_DEFAULT};
pub use topic::{render_topic_status, UpdateTopicArgs};

use crate::client::block_on;
use crate::protocol::body::{
    ClusterInfo, KvTable, TopicList, TopicRouteData, PERM_INHERIT, PERM_READ, PERM_WRITE,
};
use crate::protocol::codes::request;
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::FastjsonError;
use crate::server::connection::RemotingError;
use rpc::namesrv_call;

#[derive(Debug, clap::Args)]
pub struct NamesrvArg {
    /// NameServer address(es), `host:port[;host:port...]`; the first that answers is used.
    /// Defaults to $NAMESRV_ADDR, as for mqadmin, then to 127.0.0.1:9876.
    #[arg(short = 'n', long = "namesrvAddr")]
    pub namesrv: Option<String>,
}

/// The environment variable mqadmin reads the NameServer list from.
const NAMESRV_ADDR_ENV: &str = "NAMESRV_ADDR";
const NAMESRV_ADDR_DEFAULT: &str = "127.0.0.1:9876";

impl NamesrvArg {
    fn addresses(&self) -> String {
        self.namesrv
            .clone()
            .or_else(|| std::env::var(NAMESRV_ADDR_ENV).ok())
            .unwrap_or_else(|| NAMESRV_ADDR_DEFAULT.to_owned())
    }

    /// Each address of the list, in order.
    fn address_list(&self) -> Vec<String> {
        self.addresses()
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum AdminCommand {
    /// List clusters and the brokers registered in them.
    #[command(name = "clusterList")]
    ClusterList {
        #[command(flatten)]
        namesrv: NamesrvArg,
    },
    /// Show where a topic lives: its brokers and queues.
    #[command(name = "topicRoute")]
    TopicRoute {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// List every topic the NameServer knows.
    #[command(name = "topicList")]
    TopicList {
        #[command(flatten)]
        namesrv: NamesrvArg,
    },
    /// Create or change a topic on one broker (-b) or every master of a cluster (-c).
    #[command(name = "updateTopic")]
    UpdateTopic(UpdateTopicArgs),
    /// Each queue's min and max offset and last store time.
    #[command(name = "topicStatus")]
    TopicStatus {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// A consumer group's progress per queue; without -g, one line per group.
    #[command(name = "consumerProgress")]
    ConsumerProgress {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 'g', long = "groupName")]
        group: Option<String>,
        #[arg(short = 't', long = "topicName")]
        topic: Option<String>,
    },
    /// A consumer group's connected clients and subscriptions.
    #[command(name = "consumerConnection")]
    ConsumerConnection {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 'g', long = "consumerGroup")]
        group: String,
        /// Ask this broker instead of one serving the group.
        #[arg(short = 'b', long = "brokerAddr")]
        broker_addr: Option<String>,
    },
    /// Show messages by id: offsetMsgId, or message id (UNIQ_KEY) with -t.
    #[command(name = "queryMsgById")]
    QueryMsgById {
        #[command(flatten)]
        namesrv: NamesrvArg,
        /// One id or several separated by `,`.
        #[arg(short = 'i', long = "msgId")]
        ids: String,
        #[arg(short = 't', long = "topic")]
        topic: Option<String>,
    },
    /// List the messages of a topic carrying a key.
    #[command(name = "queryMsgByKey")]
    QueryMsgByKey {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 't', long = "topic")]
        topic: String,
        #[arg(short = 'k', long = "msgKey")]
        key: String,
        /// Stored at or after this time (ms since the epoch).
        #[arg(short = 'b', long = "beginTimestamp", default_value_t = 0)]
        begin_timestamp: i64,
        /// Stored at or before this time (ms since the epoch).
        #[arg(short = 'e', long = "endTimestamp", default_value_t = i64::MAX)]
        end_timestamp: i64,
        /// At most this many messages per broker.
        #[arg(short = 'm', long = "maxNum", default_value_t = QUERY_MAX_NUM_DEFAULT)]
        max_num: i32,
    },
    /// A broker's runtime statistics (-b), or those of every broker of a cluster (-c).
    #[command(name = "brokerStatus")]
    BrokerStatus {
        #[command(flatten)]
        namesrv: NamesrvArg,
        #[arg(short = 'b', long = "brokerAddr", group = "target", required = true)]
        broker_addr: Option<String>,
        #[arg(short = 'c', long = "clusterName", group = "target", required = true)]
        cluster: Option<String>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no executor: {0}")]
    Runtime(#[from] std::io::Error),
    #[error(transparent)]
    Remoting(#[from] RemotingError),
    #[error("{addr} answered {name} ({code}): {remark}")]
    Refused {
        addr: String,
        code: i32,
        name: &'static str,
        remark: String,
    },
    #[error("unreadable response body: {0}")]
    Body(#[from] FastjsonError),
    #[error("unreadable message record: {0}")]
    Record(#[from] crate::protocol::message::record::RecordError),
    #[error("no NameServer address given")]
    NoAddress,
    #[error("{0}")]
    NotFound(String),
    #[error("usage: {0}")]
    Usage(&'static str),
}

/// Runs one admin command and returns what it prints.
pub fn run(command: &AdminCommand) -> Result<String, AdminError> {
    block_on(run_async(command))?
}

async fn run_async(command: &AdminCommand) -> Result<String, AdminError> {
    match command {
        AdminCommand::ClusterList { namesrv } => {
            let info = rpc::cluster_info(namesrv).await?;
            Ok(render_cluster_list(&info))
        }
        AdminCommand::TopicRoute { namesrv, topic } => {
            let route: TopicRouteData = rpc::topic_route(namesrv, topic).await?;
            Ok(render_topic_route(topic, &route))
        }
        AdminCommand::TopicList { namesrv } => {
            let req = RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
            let list: TopicList = namesrv_call(namesrv, req).await?;
            let mut topics = list.topic_list;
            topics.sort();
            Ok(topics.iter().map(|t| format!("{t}\n")).collect())
        }
        AdminCommand::UpdateTopic(args) => topic::update_topic(args).await,
        AdminCommand::TopicStatus { namesrv, topic } => topic::topic_status(namesrv, topic).await,
        AdminCommand::ConsumerProgress {
            namesrv,
            group,
            topic,
        } => consumer::consumer_progress(namesrv, group.as_deref(), topic.as_deref()).await,
        AdminCommand::ConsumerConnection {
            namesrv,
            group,
            broker_addr,
        } => consumer::consumer_connection(namesrv, group, broker_addr.as_deref()).await,
        AdminCommand::QueryMsgById {
            namesrv,
            ids,
            topic,
        } => {
            let now_ms = now_ms();
            let mut out = String::new();
            for id in ids.split(',').map(str::trim).filter(|id| !id.is_empty()) {
                let record = message::query_by_id(namesrv, topic.as_deref(), id, now_ms).await?;
                out += &render_message(&record);
            }
            Ok(out)
        }
        AdminCommand::QueryMsgByKey {
            namesrv,
            topic,
            key,
            begin_timestamp,
            end_timestamp,
            max_num,
        } => {
            let query = message::KeyQuery {
                topic,
                key,
                max_num: *max_num,
                begin_timestamp: *begin_timestamp,
                end_timestamp: *end_timestamp,
                unique: false,
            };
            let records = message::query_by_key(namesrv, &query).await?;
            Ok(render_key_query(&records))
        }
        AdminCommand::BrokerStatus {
            namesrv,
            broker_addr,
            cluster,
        } => broker_status(namesrv, broker_addr.as_deref(), cluster.as_deref()).await,
    }
}

/// Wall-clock time for the UNIQ_KEY look-back window.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn broker_status(
    namesrv: &NamesrvArg,
    broker_addr: Option<&str>,
    cluster: Option<&str>,
) -> Result<String, AdminError> {
    let fetch = |addr: String| async move {
        let req = RemotingCommand::request(request::GET_BROKER_RUNTIME_INFO);
        rpc::broker_call::<KvTable>(&addr, req).await
    };
    match (broker_addr, cluster) {
        (Some(addr), _) => Ok(render_broker_status(&fetch(addr.to_owned()).await?, None)),
        (None, Some(cluster)) => {
            let info = rpc::cluster_info(namesrv).await?;
            let mut out = String::new();
            // Masters and slaves, by broker name then id; a broker that fails is reported
            // and skipped, as mqadmin does.
            for name in info.cluster_addr_table.get(cluster).into_iter().flatten() {
                let Some(broker) = info.broker_addr_table.get(name) else {
                    continue;
                };
                for addr in broker.broker_addrs.values() {
                    match fetch(addr.clone()).await {
                        Ok(table) => out += &render_broker_status(&table, Some(addr)),
                        Err(err) => tracing::warn!(%addr, "brokerStatus: {err}"),
                    }
                }
            }
            Ok(out)
        }
        (None, None) => Err(AdminError::Usage(
            "brokerStatus needs -b brokerAddr or -c clusterName",
        )),
    }
}

/// `BrokerStatusSubCommand`'s layout, keys sorted: `%-32s: %s`, or with `-c` each line led
/// by the broker's address (`%-24s %-32s: %s`).
pub fn render_broker_status(table: &KvTable, broker_addr: Option<&str>) -> String {
    table
        .table
        .iter()
        .map(|(key, value)| match broker_addr {
            Some(addr) => format!("{addr:<24} {key:<32}: {value}\n"),
            None => format!("{key:<32}: {value}\n"),
        })
        .collect()
}

fn render_cluster_list(info: &ClusterInfo) -> String {
    let mut rows = Vec::new();
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(broker) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &broker.broker_addrs {
                rows.push(vec![
                    cluster.clone(),
                    name.clone(),
                    id.to_string(),
                    addr.clone(),
                ]);
            }
        }
    }
    table::render(&["Cluster Name", "Broker Name", "BID", "Addr"], &rows)
}

fn render_topic_route(topic: &str, route: &TopicRouteData) -> String {
    // NameServers list brokers in hash order; sort as the Java client does.
    let mut broker_datas: Vec<_> = route.broker_datas.iter().collect();
    broker_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let mut brokers = Vec::new();
    for broker in broker_datas {
        for (id, addr) in &broker.broker_addrs {
            brokers.push(vec![
                broker.broker_name.clone(),
                broker.cluster.clone(),
                id.to_string(),
                addr.clone(),
            ]);
        }
    }
    let mut queue_datas = route.queue_datas.clone();
    queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let queues: Vec<Vec<String>> = queue_datas
        .iter()
        .map(|q| {
            vec![
                q.broker_name.clone(),
                q.read_queue_nums.to_string(),
                q.write_queue_nums.to_string(),
                perm_text(q.perm),
            ]
        })
        .collect();
    format!(
        "Topic: {topic}\n\n{}\n{}",
        table::render(&["Broker Name", "Cluster", "BID", "Addr"], &brokers),
        table::render(
            &["Broker Name", "Read Queues", "Write Queues", "Perm"],
            &queues
        )
    )
}

/// `PermName.perm2String`: `R`, `W`, `X` or `-` for each bit.
fn perm_text(perm: i32) -> String {
    [(PERM_READ, 'R'), (PERM_WRITE, 'W'), (PERM_INHERIT, 'X')]
        .iter()
        .map(|(bit, letter)| if perm & bit != 0 { *letter } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests;
