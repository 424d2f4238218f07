//! proto-body < WATCH_BODY > FILE: a JSON watch-list body (one event a
//! line, as `curl -N` prints the replay server's) as the protobuf watch
//! body the apiserver would send for it, for `replay --protobuf FILE`.
//! Reads up to the initial-events-end bookmark (the replay holds the
//! stream open after it).

use std::io::{BufRead, Write};

fn main() {
    let mut json = Vec::new();
    for line in std::io::stdin().lock().split(b'\n') {
        let Ok(line) = line else { break };
        let mark = b"k8s.io/initial-events-end";
        let end = line.windows(mark.len()).any(|w| w == mark);
        json.extend_from_slice(&line);
        json.push(b'\n');
        if end {
            break;
        }
    }
    let body = kube_tattler::__fuzz::protobuf_watch_body(&json);
    std::io::stdout().lock().write_all(&body).expect("write");
}
