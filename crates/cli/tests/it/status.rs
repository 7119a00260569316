use std::io::{Read, Write};
use std::net::TcpListener;

use crate::support::runnel;

/// What an app's `/api/status` returns, trimmed to one streamlet and one topic.
const STATUS: &str = r#"{"app":"demo","ready":true,
 "streamlets":[{"name":"copy","type":"copy","state":"running","restarts":2,"records_in":40,
   "records_out":40,"rate_in":12.4,"rate_out":12.4,"lag":7,"dead_lettered":3,"last_error":null,
   "inlets":[{"port":"in","topic":"raw","group":"demo.copy.in","records":40,"partition_lag":[7]}],
   "outlets":[{"port":"out","topic":"copied","records":40}]}],
 "topics":[{"name":"raw","producers":[],"consumers":["copy.in"],
   "partitions":[{"partition":0,"start":0,"end":47}],"lag":7}]}"#;

/// Answers every request on a free port with `STATUS`, in the background.
fn fake_admin_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                STATUS.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(STATUS.as_bytes());
        }
    });
    address
}

#[test]
fn status_prints_a_table_by_default() {
    let address = fake_admin_endpoint();
    let run = runnel(&["status", "--admin", &address]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "app demo (ready)");
    let copy = lines
        .iter()
        .find(|l| l.starts_with("copy"))
        .expect("a row for the streamlet");
    let columns: Vec<&str> = copy.split_whitespace().collect();
    assert_eq!(
        columns,
        ["copy", "copy", "running", "12", "12", "7", "3", "2"]
    );
    let raw = lines
        .iter()
        .find(|l| l.starts_with("raw"))
        .expect("a row for the topic");
    assert_eq!(
        raw.split_whitespace().collect::<Vec<_>>(),
        ["raw", "1", "47", "7"]
    );
}

#[test]
fn status_prints_json_and_yaml_on_request() {
    let address = fake_admin_endpoint();
    let json = runnel(&["status", "--admin", &address, "-o", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["streamlets"][0]["inlets"][0]["partition_lag"][0], 7);
    let yaml = runnel(&["status", "--admin", &address, "-o", "yaml"]);
    assert!(
        yaml.stdout
            .starts_with("app: demo\nready: true\nstreamlets:\n- name: copy\n"),
        "{}",
        yaml.stdout
    );
}

#[test]
fn status_of_nothing_running_says_where_it_looked() {
    let run = runnel(&["status", "--admin", "127.0.0.1:1"]);
    assert_eq!(run.code, 1, "the same code as an app's own status command");
    assert!(
        run.stderr
            .starts_with("error: no runnel process answered at http://127.0.0.1:1/api/status: "),
        "{}",
        run.stderr
    );
}
