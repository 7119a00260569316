use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use crate::support::runnel;

/// What the process holding the key's partition answers, trimmed.
const OWNER: &str = r#"{"key":"k","key_hex":"6b","partition":1,"partitions":2,"held":[1],
 "owner":true,"states":[{"name":"count","kind":"value","partition":1,"value":3}],"timers":[]}"#;

/// What another member of the group answers.
const OTHER: &str = r#"{"key":"k","key_hex":"6b","partition":1,"partitions":2,"held":[0],
 "owner":false,"states":[],"timers":[],
 "message":"key 'k' is on input partition 1 of 2, which this member does not hold (it holds 0): ask the member that holds it"}"#;

/// Answers every request on a free port with `status` and `body`, in the background, and
/// sends each request line it receives to the returned receiver.
fn fake_admin_endpoint(
    status: &'static str,
    body: &'static str,
) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (requests, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 1024];
            let read = stream.read(&mut request).unwrap_or(0);
            let text = String::from_utf8_lossy(&request[..read]);
            let _ = requests.send(text.lines().next().unwrap_or_default().to_owned());
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    (address, received)
}

#[test]
fn state_get_prints_the_answer_of_the_process_holding_the_partition() {
    let (other, other_requests) = fake_admin_endpoint("421 Misdirected Request", OTHER);
    let (owner, owner_requests) = fake_admin_endpoint("200 OK", OWNER);
    let run = runnel(&[
        "state", "get", "counts", "k", "--admin", &other, "--admin", &owner,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        printed,
        serde_json::from_str::<serde_json::Value>(OWNER).unwrap()
    );
    for requests in [other_requests, owner_requests] {
        assert_eq!(
            requests.recv().unwrap(),
            "GET /api/state/counts?key=k HTTP/1.1"
        );
    }
}

#[test]
fn state_get_says_which_partition_a_process_lacks() {
    let (other, _) = fake_admin_endpoint("421 Misdirected Request", OTHER);
    let run = runnel(&["state", "get", "counts", "k", "--admin", &other]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "error: http://{other}/api/state/counts?key=k: key 'k' is on input partition 1 of 2, which this member does not hold (it holds 0): ask the member that holds it\n"
        )
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn state_get_sends_binary_keys_as_hex_and_reports_refusals() {
    let (endpoint, requests) = fake_admin_endpoint(
        "404 Not Found",
        r#"{"error":"no streamlet instance 'counts' runs in this process (it runs source)"}"#,
    );
    let run = runnel(&[
        "state", "get", "counts", "00FF", "--hex", "--admin", &endpoint,
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        requests.recv().unwrap(),
        "GET /api/state/counts?key_hex=00ff HTTP/1.1"
    );
    assert_eq!(
        run.stderr,
        format!(
            "error: http://{endpoint}/api/state/counts?key_hex=00ff answered 404: no streamlet instance 'counts' runs in this process (it runs source)\n"
        )
    );
    let nobody = runnel(&["state", "get", "counts", "k", "--admin", "127.0.0.1:1"]);
    assert_eq!(nobody.code, 1);
    assert!(
        nobody.stderr.starts_with(
            "error: no runnel process answered at http://127.0.0.1:1/api/state/counts?key=k: "
        ),
        "{}",
        nobody.stderr
    );
}

/// A stand-in admin endpoint of a pod at `ip`, on the admin port, answering as [`fake_admin_endpoint`].
fn fake_pod_endpoint(ip: &str, status: &'static str, body: &'static str) -> mpsc::Receiver<String> {
    let listener = TcpListener::bind((ip, runnel_application::ADMIN_PORT)).unwrap();
    let (requests, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 1024];
            let read = stream.read(&mut request).unwrap_or(0);
            let text = String::from_utf8_lossy(&request[..read]);
            let _ = requests.send(text.lines().next().unwrap_or_default().to_owned());
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    received
}

/// A pod of app `demo` running `instance`, at `ip`.
fn pod(name: &str, instance: &str, ip: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                runnel_operator::names::APP_LABEL: "demo",
                runnel_operator::names::STREAMLET_LABEL: instance,
            },
        },
        "spec": {"containers": [{"name": "streamlet", "image": "demo:1"}]},
        "status": {"podIP": ip},
    }))
    .unwrap()
}

/// On a real control plane: the pods are asked through the real API server's pod proxy.
#[test]
fn state_get_asks_the_instance_pods_through_the_api_server() {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube::Api;
    use kube::api::{Patch, PatchParams, PostParams};

    const NAMESPACE: &str = "streams";
    // Addresses of their own, so the pods can share the admin port.
    let addresses: Vec<String> = (0..3).map(|_| runnel_test_cluster::pod_ip()).collect();
    let other = fake_pod_endpoint(&addresses[0], "421 Misdirected Request", OTHER);
    let owner = fake_pod_endpoint(&addresses[1], "200 OK", OWNER);
    let unrelated = fake_pod_endpoint(&addresses[2], "200 OK", OWNER);
    let plane = runnel_test_cluster::ControlPlane::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = runnel_test_cluster::ControlPlane::client(plane.kubeconfig()).await;
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let pods: Api<Pod> = Api::namespaced(client, NAMESPACE);
        for (name, instance, ip) in [
            ("demo-counts-a", "counts", &addresses[0]),
            ("demo-counts-b", "counts", &addresses[1]),
            ("demo-source-a", "source", &addresses[2]),
        ] {
            pods.create(&PostParams::default(), &pod(name, instance, ip))
                .await
                .unwrap();
            // The server ignores a created pod's status; a kubelet reports it.
            let status = serde_json::json!({"status": {"podIP": ip, "podIPs": [{"ip": ip}]}});
            pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                .await
                .unwrap();
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let admin = std::fs::read_to_string(plane.kubeconfig()).unwrap();
    std::fs::write(
        &kubeconfig,
        admin.replace("namespace: default", &format!("namespace: {NAMESPACE}")),
    )
    .unwrap();
    let kubeconfig = kubeconfig.to_str().unwrap();

    let run = runnel(&[
        "state",
        "get",
        "counts",
        "k",
        "--app",
        "demo",
        "--kubeconfig",
        kubeconfig,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        printed,
        serde_json::from_str::<serde_json::Value>(OWNER).unwrap()
    );
    assert_eq!(
        owner.recv_timeout(Duration::from_secs(5)).unwrap(),
        "GET /api/state/counts?key=k HTTP/1.1"
    );
    assert!(
        unrelated.try_recv().is_err(),
        "only the instance's pods are asked"
    );
    // The pods are listed by name: the one that is not the owner was asked first.
    assert_eq!(
        other.recv_timeout(Duration::from_secs(5)).unwrap(),
        "GET /api/state/counts?key=k HTTP/1.1"
    );

    let nobody = runnel(&[
        "state",
        "get",
        "sink",
        "k",
        "--app",
        "demo",
        "--kubeconfig",
        kubeconfig,
    ]);
    assert_eq!(nobody.code, 1);
    assert_eq!(
        nobody.stderr,
        "error: no pod of streams/demo runs streamlet instance 'sink'\n"
    );
    drop(runtime);
}
