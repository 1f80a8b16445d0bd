//! The requests admin commands make: to the first NameServer that answers, to every
//! NameServer, or to one broker, each checked for SUCCESS; plus the route and cluster
//! lookups most commands start from.

use super::{AdminError, NamesrvArg};
use crate::client::{RemotingClient, REQUEST_TIMEOUT_DEFAULT};
use crate::protocol::body::{self, BrokerData, ClusterInfo, TopicRouteData};
use crate::protocol::codes::{request, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::GetRouteInfoRequestHeader;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// Sends `req` to the first NameServer that accepts a connection and returns its successful
/// response.
pub async fn namesrv_request(
    namesrv: &NamesrvArg,
    req: RemotingCommand,
) -> Result<RemotingCommand, AdminError> {
    let mut last_error = AdminError::NoAddress;
    for addr in &namesrv.address_list() {
        match RemotingClient::connect(addr).await {
            Ok(client) => return checked(addr, &client, req, REQUEST_TIMEOUT_DEFAULT).await,
            Err(err) => last_error = err.into(),
        }
    }
    Err(last_error)
}

/// Like [`namesrv_request`], decoding the response body as `T`.
pub async fn namesrv_call<T: DeserializeOwned>(
    namesrv: &NamesrvArg,
    req: RemotingCommand,
) -> Result<T, AdminError> {
    Ok(body::decode(&namesrv_request(namesrv, req).await?.body)?)
}

/// Sends `req` to every NameServer (as mqadmin does for KV config writes); all must accept.
pub async fn every_namesrv(namesrv: &NamesrvArg, req: RemotingCommand) -> Result<(), AdminError> {
    let mut sent = false;
    for addr in &namesrv.address_list() {
        let client = RemotingClient::connect(addr).await?;
        checked(addr, &client, req.clone(), REQUEST_TIMEOUT_DEFAULT).await?;
        sent = true;
    }
    if sent {
        Ok(())
    } else {
        Err(AdminError::NoAddress)
    }
}

/// Sends `req` to the broker at `addr` and returns its successful response.
pub async fn broker_request(
    addr: &str,
    req: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, AdminError> {
    let client = RemotingClient::connect(addr).await?;
    checked(addr, &client, req, timeout).await
}

/// Like [`broker_request`] with the default timeout, decoding the body as `T`.
pub async fn broker_call<T: DeserializeOwned>(
    addr: &str,
    req: RemotingCommand,
) -> Result<T, AdminError> {
    let resp = broker_request(addr, req, REQUEST_TIMEOUT_DEFAULT).await?;
    Ok(body::decode(&resp.body)?)
}

async fn checked(
    addr: &str,
    client: &RemotingClient,
    req: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, AdminError> {
    let resp = client.request(req, timeout).await?;
    if resp.code != response::SUCCESS {
        return Err(AdminError::Refused {
            addr: addr.to_owned(),
            code: resp.code,
            name: response::name(resp.code).unwrap_or("UNKNOWN"),
            remark: resp.remark.unwrap_or_default(),
        });
    }
    Ok(resp)
}

pub async fn topic_route(namesrv: &NamesrvArg, topic: &str) -> Result<TopicRouteData, AdminError> {
    let header = GetRouteInfoRequestHeader {
        topic: topic.to_owned(),
        accept_standard_json_only: None,
    };
    let req = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC).with_header(&header);
    namesrv_call(namesrv, req).await
}

pub async fn cluster_info(namesrv: &NamesrvArg) -> Result<ClusterInfo, AdminError> {
    namesrv_call(
        namesrv,
        RemotingCommand::request(request::GET_BROKER_CLUSTER_INFO),
    )
    .await
}

/// The address a tool talks to for a broker group (`BrokerData.selectBrokerAddr`): the
/// master, else the lowest-numbered slave (Java picks a random one).
pub fn select_broker_addr(broker: &BrokerData) -> Option<&str> {
    broker
        .master_addr()
        .or_else(|| broker.broker_addrs.values().next().map(String::as_str))
}

/// The master address of every broker group in `cluster`, sorted by broker name.
pub fn cluster_masters<'a>(info: &'a ClusterInfo, cluster: &str) -> Vec<(&'a str, &'a str)> {
    let Some(names) = info.cluster_addr_table.get(cluster) else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let broker = info.broker_addr_table.get(name)?;
            Some((name.as_str(), broker.master_addr()?))
        })
        .collect()
}
