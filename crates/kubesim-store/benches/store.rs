//! Store hot paths: committing writes, rebuilding an old snapshot for a
//! `continue` token, and reading a page of a snapshot.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use kubesim_store::{Attrs, MemStore, Options, Store, WriteOp};

fn body(i: usize) -> Bytes {
    Bytes::from(format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p{i}\",\"resourceVersion\":\"{i}\"}},\"spec\":{{}}}}{}",
        " ".repeat(2800)
    ))
}

fn filled(n: usize) -> MemStore {
    let s = MemStore::ephemeral(Options::default());
    for i in 0..n {
        let b = body(i);
        s.write("pods", &format!("default/p{i:07}"), &mut |_, _| {
            WriteOp::Put {
                bytes: b.clone(),
                attrs: Attrs::default(),
            }
        })
        .expect("write");
    }
    s
}

fn writes(c: &mut Criterion) {
    c.bench_function("store/put 3 KB object", |b| {
        let s = MemStore::ephemeral(Options::default());
        let payload = body(0);
        let mut i = 0usize;
        b.iter(|| {
            i += 1;
            s.write("pods", &format!("default/p{i:09}"), &mut |_, _| {
                WriteOp::Put {
                    bytes: payload.clone(),
                    attrs: Attrs::default(),
                }
            })
            .expect("write")
        })
    });
}

fn snapshots(c: &mut Criterion) {
    let s = filled(20_000);
    c.bench_function("store/snapshot 1,000 revisions back (20k objects)", |b| {
        b.iter_batched(
            || {
                // A write per iteration defeats the snapshot cache.
                let b2 = body(1);
                s.write("pods", "default/zz", &mut |_, _| WriteOp::Put {
                    bytes: b2.clone(),
                    attrs: Attrs::default(),
                })
                .expect("write");
                s.current_rev() - 1_000
            },
            |old| s.snapshot("pods", Some(old)).expect("snapshot"),
            BatchSize::SmallInput,
        )
    });
    c.bench_function("store/page of 500 from the newest snapshot", |b| {
        b.iter(|| {
            let snap = s.snapshot("pods", None).expect("snapshot");
            snap.items
                .iter()
                .take(500)
                .map(|(_, r)| r.bytes.len())
                .sum::<usize>()
        })
    });
}

criterion_group!(benches, writes, snapshots);
criterion_main!(benches);
