//! `ringmq admin`: mqadmin-like commands speaking the remoting protocol to any NameServer
//! (ringmq's or Apache RocketMQ's), printing readable tables.

mod table;

use crate::client::{block_on, RemotingClient, REQUEST_TIMEOUT_DEFAULT};
use crate::protocol::body::{
    self, ClusterInfo, TopicList, TopicRouteData, PERM_INHERIT, PERM_READ, PERM_WRITE,
};
use crate::protocol::codes::{request, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::FastjsonError;
use crate::protocol::header::GetRouteInfoRequestHeader;
use crate::server::connection::RemotingError;

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
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no executor: {0}")]
    Runtime(#[from] std::io::Error),
    #[error(transparent)]
    Remoting(#[from] RemotingError),
    #[error("the NameServer answered {name} ({code}): {remark}")]
    Refused {
        code: i32,
        name: &'static str,
        remark: String,
    },
    #[error("unreadable response body: {0}")]
    Body(#[from] FastjsonError),
    #[error("no NameServer address given")]
    NoAddress,
}

/// Runs one admin command and returns what it prints.
pub fn run(command: &AdminCommand) -> Result<String, AdminError> {
    block_on(async {
        match command {
            AdminCommand::ClusterList { namesrv } => {
                let info: ClusterInfo = call(
                    namesrv,
                    RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO),
                )
                .await?;
                Ok(render_cluster_list(&info))
            }
            AdminCommand::TopicRoute { namesrv, topic } => {
                let header = GetRouteInfoRequestHeader {
                    topic: topic.clone(),
                    accept_standard_json_only: None,
                };
                let req =
                    RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC).with_header(&header);
                let route: TopicRouteData = call(namesrv, req).await?;
                Ok(render_topic_route(topic, &route))
            }
            AdminCommand::TopicList { namesrv } => {
                let req = RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
                let list: TopicList = call(namesrv, req).await?;
                let mut topics = list.topic_list;
                topics.sort();
                Ok(topics.iter().map(|t| format!("{t}\n")).collect())
            }
        }
    })?
}

/// Sends `req` to the first NameServer that answers and decodes a successful response's body.
async fn call<T: serde::de::DeserializeOwned>(
    namesrv: &NamesrvArg,
    req: RemotingCommand,
) -> Result<T, AdminError> {
    let mut last_error = AdminError::NoAddress;
    for addr in namesrv
        .addresses()
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        let client = match RemotingClient::connect(addr).await {
            Ok(client) => client,
            Err(err) => {
                last_error = err.into();
                continue;
            }
        };
        let resp = client.request(req.clone(), REQUEST_TIMEOUT_DEFAULT).await?;
        if resp.code != response::SUCCESS {
            let name = response::name(resp.code).unwrap_or("UNKNOWN");
            return Err(AdminError::Refused {
                code: resp.code,
                name,
                remark: resp.remark.unwrap_or_default(),
            });
        }
        return Ok(body::decode(&resp.body)?);
    }
    Err(last_error)
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
