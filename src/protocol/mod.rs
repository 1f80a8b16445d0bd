//! RocketMQ remoting protocol: frames, codes, headers, bodies, stored-message format.
