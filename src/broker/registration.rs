//! Registration with every NameServer: at start, every `registerNameServerPeriod` (30 s), at
//! once after the topic table changes, and unregistration on a clean stop. Runs on shard 0,
//! which owns the topic table it reports.

use super::config::BrokerConfig;
use super::error::{BrokerError, BrokerResult};
use crate::client::RemotingClient;
use crate::namesrv::processor::body_crc32;
use crate::protocol::body::{self, RegisterBrokerBody, TopicConfigSerializeWrapper};
use crate::protocol::codes::{request, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

/// How long one NameServer may take to answer; Java's `registerBrokerTimeoutMills` is 6 s.
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(6);

/// REGISTER_BROKER as a 5.x Java broker sends it (JSON body, CRC of the body).
pub fn register_request(
    config: &BrokerConfig,
    topics: &TopicConfigSerializeWrapper,
) -> BrokerResult<RemotingCommand> {
    let body = body::encode(&RegisterBrokerBody {
        filter_server_list: vec![],
        topic_config_serialize_wrapper: topics.clone(),
    })?;
    let addr = config.advertised_addr().to_string();
    let header = RegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: addr.clone(),
        cluster_name: config.broker_cluster_name.clone(),
        // No HA yet: Java sends brokerIP2:haListenPort; the address keeps the field truthful.
        ha_server_addr: addr,
        broker_id: config.broker_id,
        heartbeat_timeout_millis: None,
        enable_acting_master: Some(false),
        compressed: false,
        body_crc32: body_crc32(&body),
    };
    Ok(RemotingCommand::request(request::REGISTER_BROKER)
        .with_header(&header)
        .with_body(body))
}

/// The broker's connections to its NameServers, kept open between rounds: a NameServer drops
/// a broker whose connection closes (Java's `onChannelDestroy`), so a connection per round
/// would unregister the broker as soon as it registered.
#[derive(Default)]
pub struct NamesrvLinks {
    links: RefCell<HashMap<String, Rc<RemotingClient>>>,
}

impl NamesrvLinks {
    /// Registers with every NameServer; one that cannot be reached is logged and tried again
    /// next round (as Java does), so one dead NameServer does not stop the others.
    pub async fn register_all(
        &self,
        config: &BrokerConfig,
        topics: &TopicConfigSerializeWrapper,
    ) -> BrokerResult<usize> {
        let request = register_request(config, topics)?;
        let mut registered = 0;
        for namesrv in &config.namesrv_addrs {
            match self.call(namesrv, request.clone()).await {
                Ok(()) => registered += 1,
                Err(err) => {
                    tracing::warn!(%namesrv, %err, "could not register with the NameServer")
                }
            }
        }
        Ok(registered)
    }

    /// UNREGISTER_BROKER with every NameServer (clean stop).
    pub async fn unregister_all(&self, config: &BrokerConfig) {
        let header = UnregisterBrokerRequestHeader {
            broker_name: config.broker_name.clone(),
            broker_addr: config.advertised_addr().to_string(),
            cluster_name: config.broker_cluster_name.clone(),
            broker_id: config.broker_id,
        };
        let request = RemotingCommand::request(request::UNREGISTER_BROKER).with_header(&header);
        for namesrv in &config.namesrv_addrs {
            if let Err(err) = self.call(namesrv, request.clone()).await {
                tracing::warn!(%namesrv, %err, "could not unregister from the NameServer");
            }
        }
    }

    async fn link(&self, namesrv: &str) -> BrokerResult<Rc<RemotingClient>> {
        let open = self
            .links
            .borrow()
            .get(namesrv)
            .filter(|c| !c.connection().is_closed())
            .cloned();
        if let Some(client) = open {
            return Ok(client);
        }
        let client = RemotingClient::connect(namesrv)
            .await
            .map_err(|err| BrokerError::Internal(format!("NameServer {namesrv}: {err}")))?;
        let client = Rc::new(client);
        self.links
            .borrow_mut()
            .insert(namesrv.to_owned(), client.clone());
        Ok(client)
    }

    async fn call(&self, namesrv: &str, request: RemotingCommand) -> BrokerResult<()> {
        let client = self.link(namesrv).await?;
        let answer = client
            .request(request, REGISTER_TIMEOUT)
            .await
            .map_err(|err| BrokerError::Internal(format!("NameServer {namesrv}: {err}")))?;
        match answer.code {
            response::SUCCESS => Ok(()),
            code => Err(BrokerError::Internal(format!(
                "NameServer {namesrv} answered {code}: {}",
                answer.remark.unwrap_or_default()
            ))),
        }
    }
}
