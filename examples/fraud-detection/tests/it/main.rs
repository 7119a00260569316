//! End-to-end tests of the fraud-detection app: the committed models against their
//! reference scores, and the binary driven over HTTP as a user would.

mod backlog; // a backlog scored with the slow model commits as it goes
mod python; // the Python scorer (scikit-learn) scores as train.py did, through a crash
mod reference; // the committed models score, and the app enriches, as train.py did
mod run; // the acceptance run: swaps, rejections, flagged frauds, a restart
mod support; // the binary on free ports, its ingresses, its topics, the model files
mod tansu; // the acceptance run on a Kafka-protocol broker, one process per streamlet
