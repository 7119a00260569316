//! Integration tests of the admin endpoint against a real run on the in-memory backplane.

mod charts; // the page charts the last minutes, outages marked (headless Chromium)
mod endpoints; // /metrics, /health, /api/status and the page
mod state; // /api/state from the process holding the key's partition; state get; sizes
mod status; // fetching and printing the status as `status` does
mod support; // a small app running with its admin endpoint
