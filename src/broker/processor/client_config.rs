//! CHECK_CLIENT_CONFIG, which a Java push consumer sends for each non-TAG subscription before
//! it starts (`checkClientInBroker`): answered as Apache's `ClientManageProcessor`, on the
//! connection's shard. A TAG subscription (or none) is fine; an SQL92 one needs
//! `enablePropertyFilter` and an expression that compiles (compiled into this shard's cache,
//! where the group's first pull through this shard finds it).

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::Shard;
use crate::protocol::body::check_client::CheckClientRequestBody;
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::server::Response;

pub fn serve(
    shard: &Shard,
    command: &RemotingCommand,
    body: CheckClientRequestBody,
) -> BrokerResult<Response> {
    if let Some(subscription) = body.subscription_data.filter(|s| !s.is_tag_type()) {
        if !shard.config().enable_property_filter {
            return Err(BrokerError::PropertyFilterDisabled(
                subscription.expression_type,
            ));
        }
        shard
            .selector(&body.group, &subscription)
            .map_err(BrokerError::InvalidSelector)?;
    }
    Ok(RemotingCommand::response_to(command, response::SUCCESS, None).into())
}
