//! End-to-end tests: the taxi-ride binary driven over HTTP as a user runs it, with its
//! topics read back from the embedded log.

mod join; // rides and fares joined across a kill -9; unmatched halves given up on
