//! `consumerProgress` (GET_CONSUME_STATS from every broker group serving the group) and
//! `consumerConnection` (GET_CONSUMER_CONNECTION_LIST from one of them).

use super::format::{date_time, front, version_desc};
use super::rpc::{self, broker_call, broker_request, select_broker_addr};
use super::{AdminError, NamesrvArg};
use crate::client::REQUEST_TIMEOUT_DEFAULT;
use crate::protocol::body::consumer_group::{Connection, ConsumerConnection};
use crate::protocol::body::heartbeat::{ConsumeType, MessageModel};
use crate::protocol::body::stats::ConsumeStats;
use crate::protocol::body::{self, TopicList, TopicRouteData};
use crate::protocol::codes::request;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{ConsumerGroupRequestHeader, GetConsumeStatsRequestHeader};

/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`: every consumer group has a `%RETRY%<group>` topic, which
/// is how tools find the brokers serving a group and list the groups.
const RETRY_TOPIC_PREFIX: &str = "%RETRY%";
/// mqadmin waits three times the usual timeout for consume stats (brokers compute them).
const CONSUME_STATS_TIMEOUT_FACTOR: u32 = 3;

/// An optional Java enum as Java's `toString` prints it: its name, or `null`.
fn enum_text(name: Option<&'static str>) -> &'static str {
    name.unwrap_or("null")
}

async fn group_route(namesrv: &NamesrvArg, group: &str) -> Result<TopicRouteData, AdminError> {
    rpc::topic_route(namesrv, &format!("{RETRY_TOPIC_PREFIX}{group}")).await
}

/// `examineConsumerConnectionInfo`: from `broker_addr`, else from a broker serving the group.
pub async fn consumer_connection_info(
    namesrv: &NamesrvArg,
    group: &str,
    broker_addr: Option<&str>,
) -> Result<ConsumerConnection, AdminError> {
    let addr = match broker_addr {
        Some(addr) => addr.to_owned(),
        None => {
            let route = group_route(namesrv, group).await?;
            route
                .broker_datas
                .iter()
                .find_map(select_broker_addr)
                .map(str::to_owned)
                .ok_or_else(|| AdminError::NotFound(format!("no broker serves group {group}")))?
        }
    };
    let header = ConsumerGroupRequestHeader {
        consumer_group: group.to_owned(),
    };
    let req = RemotingCommand::request(request::GET_CONSUMER_CONNECTION_LIST).with_header(&header);
    let connection: ConsumerConnection = broker_call(&addr, req).await?;
    if connection.connection_set.is_empty() {
        return Err(AdminError::NotFound(
            "Not found the consumer group connection".to_owned(),
        ));
    }
    Ok(connection)
}

pub async fn consumer_connection(
    namesrv: &NamesrvArg,
    group: &str,
    broker_addr: Option<&str>,
) -> Result<String, AdminError> {
    let connection = consumer_connection_info(namesrv, group, broker_addr).await?;
    Ok(render_consumer_connection(&connection))
}

/// `ConsumerConnectionSubCommand`'s layout; connections sorted by client id (a HashSet in Java).
pub fn render_consumer_connection(cc: &ConsumerConnection) -> String {
    let mut out = format!(
        "{:<36} {:<22} {:<10} {}\n",
        "#ClientId", "#ClientAddr", "#Language", "#Version"
    );
    let mut connections: Vec<&Connection> = cc.connection_set.iter().collect();
    connections.sort_by(|a, b| a.client_id.cmp(&b.client_id));
    for conn in connections {
        out += &format!(
            "{:<36} {:<22} {:<10} {}\n",
            conn.client_id,
            conn.client_addr,
            conn.language.name(),
            version_desc(conn.version)
        );
    }
    out += "\nBelow is subscription:\n";
    out += &format!("{:<20} {}\n", "#Topic", "#SubExpression");
    for sub in cc.subscription_table.values() {
        out += &format!("{:<20} {}\n", sub.topic, sub.sub_string);
    }
    out += &format!(
        "\nConsumeType: {}\nMessageModel: {}\nConsumeFromWhere: {}\n",
        enum_text(cc.consume_type.map(ConsumeType::name)),
        enum_text(cc.message_model.map(MessageModel::name)),
        enum_text(cc.consume_from_where.map(|c| c.name()))
    );
    out
}

/// `examineConsumeStats`: every broker group serving the group (found through its retry
/// topic, else through `topic`), merged.
pub async fn consume_stats(
    namesrv: &NamesrvArg,
    group: &str,
    topic: Option<&str>,
) -> Result<ConsumeStats, AdminError> {
    let route = match (group_route(namesrv, group).await, topic) {
        (Ok(route), _) => route,
        (Err(_), Some(topic)) => rpc::topic_route(namesrv, topic).await?,
        (Err(err), None) => return Err(err),
    };
    let header = GetConsumeStatsRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.map(str::to_owned),
        topic_list: None,
    };
    let mut merged = ConsumeStats::default();
    for broker in &route.broker_datas {
        let Some(addr) = select_broker_addr(broker) else {
            continue;
        };
        let req = RemotingCommand::request(request::GET_CONSUME_STATS).with_header(&header);
        let resp = broker_request(
            addr,
            req,
            REQUEST_TIMEOUT_DEFAULT * CONSUME_STATS_TIMEOUT_FACTOR,
        )
        .await?;
        let one: ConsumeStats = body::decode(&resp.body)?;
        merged.offset_table.extend(one.offset_table);
        merged.consume_tps += one.consume_tps;
    }
    Ok(merged)
}

pub async fn consumer_progress(
    namesrv: &NamesrvArg,
    group: Option<&str>,
    topic: Option<&str>,
) -> Result<String, AdminError> {
    match group {
        Some(group) => {
            let stats = consume_stats(namesrv, group, topic).await?;
            if stats.offset_table.is_empty() {
                let connection = consumer_connection_info(namesrv, group, None)
                    .await
                    .map_err(|_| {
                        AdminError::NotFound(
                            "Not found the consumer group consume stats, because return offset \
                             table is empty, maybe the consumer not online"
                                .to_owned(),
                        )
                    })?;
                if connection.message_model == Some(MessageModel::Broadcasting) {
                    return Err(AdminError::NotFound(
                        "Not found the consumer group consume stats, because return offset \
                         table is empty, the consumer is under the broadcast mode"
                            .to_owned(),
                    ));
                }
            }
            Ok(render_consumer_progress(&stats))
        }
        None => all_groups_progress(namesrv).await,
    }
}

/// `ConsumerProgressSubCommand`'s layout for one group (without client IPs).
pub fn render_consumer_progress(stats: &ConsumeStats) -> String {
    let mut out = format!(
        "{:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20} {:<20}{}\n",
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#Inflight",
        "#LastTime"
    );
    let (mut diff_total, mut inflight_total) = (0i64, 0i64);
    for (queue, offset) in &stats.offset_table {
        let diff = offset.broker_offset - offset.consumer_offset;
        let inflight = offset.pull_offset - offset.consumer_offset;
        diff_total += diff;
        inflight_total += inflight;
        let last = if offset.last_timestamp == 0 {
            "N/A".to_owned()
        } else {
            date_time(offset.last_timestamp)
        };
        out += &format!(
            "{:<64}  {:<32}  {:<4}  {:<20}  {:<20}  {:<20} {:<20} {}\n",
            front(&queue.topic, 64),
            front(&queue.broker_name, 32),
            queue.queue_id,
            offset.broker_offset,
            offset.consumer_offset,
            diff,
            inflight,
            last
        );
    }
    out += &format!(
        "\nConsume TPS: {:.2}\nConsume Diff Total: {diff_total}\nConsume Inflight Total: {inflight_total}\n",
        stats.consume_tps
    );
    out
}

/// Without `-g`: one line per consumer group (each `%RETRY%` topic names one).
async fn all_groups_progress(namesrv: &NamesrvArg) -> Result<String, AdminError> {
    let req = RemotingCommand::request(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    let list: TopicList = rpc::namesrv_call(namesrv, req).await?;
    let mut groups: Vec<&str> = list
        .topic_list
        .iter()
        .filter_map(|t| t.strip_prefix(RETRY_TOPIC_PREFIX))
        // POP retry topics (`%RETRY%group+topic` / `group:topic`) name a group too.
        .map(|rest| rest.split([':', '+']).next().unwrap_or(rest))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    let mut out = format!(
        "{:<64}  {:<6}  {:<24} {:<5}  {:<14}  {:<7}  {}\n",
        "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"
    );
    for group in groups {
        // As mqadmin: a group whose stats or connections cannot be had still gets a line.
        let stats = consume_stats(namesrv, group, None).await.ok();
        let connection = consumer_connection_info(namesrv, group, None).await.ok();
        out += &group_line(group, stats.as_ref(), connection.as_ref());
    }
    Ok(out)
}

fn group_line(
    group: &str,
    stats: Option<&ConsumeStats>,
    connection: Option<&ConsumerConnection>,
) -> String {
    let (tps, diff) = stats.map_or((0, 0), |s| (s.consume_tps as i64, s.total_diff()));
    let count = connection.map_or(0, |c| c.connection_set.len());
    let (version, kind, model) = match connection.filter(|_| count > 0) {
        Some(cc) => {
            let min_version = cc.connection_set.iter().map(|c| c.version).min();
            let passive = cc.consume_type == Some(ConsumeType::ConsumePassively);
            (
                version_desc(min_version.unwrap_or_default()),
                if cc.consume_type == Some(ConsumeType::ConsumeActively) {
                    "PULL"
                } else {
                    "PUSH"
                },
                if passive {
                    enum_text(cc.message_model.map(MessageModel::name))
                } else {
                    ""
                },
            )
        }
        None => ("OFFLINE".to_owned(), "", ""),
    };
    format!(
        "{:<64}  {:<6}  {:<24} {:<5}  {:<14}  {:<7}  {}\n",
        front(group, 64),
        count,
        version,
        kind,
        model,
        tps,
        diff
    )
}
