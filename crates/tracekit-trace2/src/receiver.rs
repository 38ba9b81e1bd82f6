//! Receiving trace2 output from git over af_unix sockets (owned by the receiver work).
