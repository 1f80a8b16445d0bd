//! `updateTopic` (UPDATE_AND_CREATE_TOPIC to one broker or every master of a cluster) and
//! `topicStatus` (GET_TOPIC_STATS_INFO from every broker group of the topic's route).

use super::format::{front, human_millis};
use super::rpc::{self, broker_request, every_namesrv, namesrv_request, select_broker_addr};
use super::{perm_text, AdminError, NamesrvArg};
use crate::client::REQUEST_TIMEOUT_DEFAULT;
use crate::protocol::body::stats::{java_double, TopicStatsTable};
use crate::protocol::body::{PERM_READ, PERM_WRITE};
use crate::protocol::codes::{request, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    CreateTopicRequestHeader, GetKvConfigResponseHeader, KvConfigKeyRequestHeader,
    PutKvConfigRequestHeader, TopicRequestHeader,
};

/// mqadmin's queue count when `-r`/`-w` are not given.
pub const QUEUE_NUMS_DEFAULT: i32 = 8;
/// `TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`, the template topic mqadmin names.
const DEFAULT_TOPIC: &str = "TBW102";
/// `NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`: where a topic's order config lives.
const ORDER_TOPIC_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";

/// What `updateTopic` creates or changes, and where.
#[derive(Debug, clap::Args)]
pub struct UpdateTopicArgs {
    #[command(flatten)]
    pub namesrv: NamesrvArg,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Create on this broker only.
    #[arg(short = 'b', long = "brokerAddr", group = "target")]
    pub broker_addr: Option<String>,
    /// Create on every master of this cluster.
    #[arg(short = 'c', long = "clusterName", group = "target")]
    pub cluster: Option<String>,
    #[arg(short = 'r', long = "readQueueNums", default_value_t = QUEUE_NUMS_DEFAULT)]
    pub read_queue_nums: i32,
    #[arg(short = 'w', long = "writeQueueNums", default_value_t = QUEUE_NUMS_DEFAULT)]
    pub write_queue_nums: i32,
    /// PermName bits: 2 write, 4 read, 6 both.
    #[arg(short = 'p', long = "perm", default_value_t = PERM_READ | PERM_WRITE)]
    pub perm: i32,
    /// Ordered topic: also records `brokerName:writeQueueNums` in the NameServers' order config.
    #[arg(short = 'o', long = "order", default_value_t = false, action = clap::ArgAction::Set)]
    pub order: bool,
}

impl UpdateTopicArgs {
    pub(super) fn header(&self) -> CreateTopicRequestHeader {
        CreateTopicRequestHeader {
            topic: self.topic.clone(),
            default_topic: DEFAULT_TOPIC.to_owned(),
            read_queue_nums: self.read_queue_nums,
            write_queue_nums: self.write_queue_nums,
            perm: self.perm,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: self.order,
            attributes: Some(String::new()),
            force: false,
        }
    }

    /// `TopicConfig.toString()` of what was sent, as mqadmin prints it.
    pub(super) fn config_text(&self) -> String {
        format!(
            "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, \
             topicFilterType=SINGLE_TAG, topicSysFlag=0, order={}, attributes={{}}]",
            self.topic,
            self.read_queue_nums,
            self.write_queue_nums,
            perm_text(self.perm),
            self.order
        )
    }
}

pub async fn update_topic(args: &UpdateTopicArgs) -> Result<String, AdminError> {
    let req =
        RemotingCommand::request(request::UPDATE_AND_CREATE_TOPIC).with_header(&args.header());
    let mut out = String::new();
    if let Some(addr) = &args.broker_addr {
        broker_request(addr, req, REQUEST_TIMEOUT_DEFAULT).await?;
        if args.order {
            let info = rpc::cluster_info(&args.namesrv).await?;
            let name = info
                .broker_addr_table
                .values()
                .find(|b| b.broker_addrs.values().any(|a| a == addr))
                .map(|b| b.broker_name.clone())
                .ok_or_else(|| AdminError::NotFound(format!("no broker group with {addr}")))?;
            let conf = format!("{name}:{}", args.write_queue_nums);
            merge_order_conf(&args.namesrv, &args.topic, &name, &conf).await?;
            out += &format!("set broker orderConf. isOrder=true, orderConf=[{conf}]\n");
        }
        out += &format!("create topic to {addr} success.\n");
    } else if let Some(cluster) = &args.cluster {
        let info = rpc::cluster_info(&args.namesrv).await?;
        let masters = rpc::cluster_masters(&info, cluster);
        if masters.is_empty() {
            return Err(AdminError::NotFound(format!(
                "no master in cluster {cluster}"
            )));
        }
        for (_, addr) in &masters {
            broker_request(addr, req.clone(), REQUEST_TIMEOUT_DEFAULT).await?;
            out += &format!("create topic to {addr} success.\n");
        }
        if args.order {
            let conf: Vec<String> = masters
                .iter()
                .map(|(name, _)| format!("{name}:{}", args.write_queue_nums))
                .collect();
            let conf = conf.join(";");
            put_order_conf(&args.namesrv, &args.topic, &conf).await?;
            out += &format!("set cluster orderConf. isOrder=true, orderConf=[{conf}]\n");
        }
    } else {
        return Err(AdminError::Usage(
            "updateTopic needs -b brokerAddr or -c clusterName",
        ));
    }
    out += &args.config_text();
    out.push('\n');
    Ok(out)
}

async fn put_order_conf(namesrv: &NamesrvArg, topic: &str, conf: &str) -> Result<(), AdminError> {
    let header = PutKvConfigRequestHeader {
        namespace: ORDER_TOPIC_NAMESPACE.to_owned(),
        key: topic.to_owned(),
        value: conf.to_owned(),
    };
    every_namesrv(
        namesrv,
        RemotingCommand::request(request::PUT_KV_CONFIG).with_header(&header),
    )
    .await
}

/// One broker's order config replaces that broker's entry in the topic's existing config.
async fn merge_order_conf(
    namesrv: &NamesrvArg,
    topic: &str,
    broker_name: &str,
    conf: &str,
) -> Result<(), AdminError> {
    let key = KvConfigKeyRequestHeader {
        namespace: ORDER_TOPIC_NAMESPACE.to_owned(),
        key: topic.to_owned(),
    };
    let get = RemotingCommand::request(request::GET_KV_CONFIG).with_header(&key);
    // No config yet is answered with QUERY_NOT_FOUND: start from an empty one.
    let old = match namesrv_request(namesrv, get).await {
        Ok(resp) => resp
            .decode_header::<GetKvConfigResponseHeader>()
            .ok()
            .and_then(|h| h.value)
            .unwrap_or_default(),
        Err(AdminError::Refused {
            code: response::QUERY_NOT_FOUND,
            ..
        }) => String::new(),
        Err(err) => return Err(err),
    };
    let mut entries: Vec<&str> = old
        .split(';')
        .filter(|e| !e.is_empty() && e.split(':').next() != Some(broker_name))
        .collect();
    entries.push(conf);
    put_order_conf(namesrv, topic, &entries.join(";")).await
}

pub async fn topic_status(namesrv: &NamesrvArg, topic: &str) -> Result<String, AdminError> {
    let route = rpc::topic_route(namesrv, topic).await?;
    let mut stats = TopicStatsTable::default();
    let header = TopicRequestHeader {
        topic: topic.to_owned(),
    };
    for broker in &route.broker_datas {
        let Some(addr) = select_broker_addr(broker) else {
            continue;
        };
        let req = RemotingCommand::request(request::GET_TOPIC_STATS_INFO).with_header(&header);
        let one: TopicStatsTable = rpc::broker_call(addr, req).await?;
        stats.offset_table.extend(one.offset_table);
        stats.topic_put_tps += one.topic_put_tps;
    }
    if stats.offset_table.is_empty() {
        return Err(AdminError::NotFound(
            "Not found the topic stats info".to_owned(),
        ));
    }
    Ok(render_topic_status(&stats))
}

/// `TopicStatusSubCommand`'s layout.
pub fn render_topic_status(stats: &TopicStatsTable) -> String {
    let mut out = format!(
        "{:<32}  {:<4}  {:<20}  {:<20}    {}\n",
        "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"
    );
    for (queue, offset) in &stats.offset_table {
        let updated = if offset.last_update_timestamp > 0 {
            human_millis(offset.last_update_timestamp)
        } else {
            String::new()
        };
        out += &format!(
            "{:<32}  {:<4}  {:<20}  {:<20}    {}\n",
            front(&queue.broker_name, 32),
            queue.queue_id,
            offset.min_offset,
            offset.max_offset,
            updated
        );
    }
    out += &format!("\nTopic Put TPS: {}\n", java_double(stats.topic_put_tps));
    out
}
