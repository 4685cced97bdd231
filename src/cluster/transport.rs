//! Internode transport: one multiplexed RPC connection per peer, checked by a handshake.
