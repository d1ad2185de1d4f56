//! Tests of the peer-run table: parsing, counting and printing.

use super::*;

const HEADER: &str =
    "solver,version,run,set,instance,status,makespan,lower_bound,time_s,time_limit_s,workers,hardware";

/// Two runs on three j30 instances and one j60 instance.
fn csv() -> String {
    [
        HEADER,
        "A,1.0,a_8w,j30,j301_1,Optimal,43,43,0.5,900,8,cluster",
        "A,1.0,a_8w,j30,j301_2,Optimal,47,47,12.0,900,8,cluster",
        "A,1.0,a_8w,j30,j301_3,Feasible,50,48,900.3,900,8,cluster",
        "A,1.0,a_8w,j60,j601_1,Optimal,77,77,3,900,8,cluster",
        "B,\"0.9, beta\",b_4w,j30,j301_1,Optimum,43,43,10,600,4,Ryzen",
        "B,\"0.9, beta\",b_4w,j30,j301_2,Solution,48,47,600,600,4,Ryzen",
        "B,\"0.9, beta\",b_4w,j30,j301_3,Optimum,48,48,9.99,600,4,Ryzen",
    ]
    .join("\n")
}

fn row(instance: &str, status: &str, time_s: f64) -> PsplibRow {
    PsplibRow {
        instance: instance.into(),
        jobs: 32,
        status: status.into(),
        makespan: Some(43),
        lower_bound: Some(43),
        critical_path: 40,
        best_known: Some(43),
        best_known_optimal: Some(true),
        pct_above_best_known: Some(0.0),
        pct_above_cpm: Some(7.5),
        time_s,
        checked: true,
        findings: Vec::new(),
    }
}

fn own(time_limit_s: Option<f64>) -> OwnSettings<'static> {
    OwnSettings {
        solver: "pumpkin",
        version: "concerto 0.1.0",
        threads: 2,
        time_limit_s,
    }
}

#[test]
fn parses_rows_with_quoted_cells() {
    let peers = parse_peers(&csv(), "peers.csv").unwrap();
    assert_eq!(peers.len(), 7);
    assert_eq!(peers[4].version, "0.9, beta");
    assert_eq!(peers[4].hardware, "Ryzen");
    assert_eq!(peers[4].line, 6);
    assert_eq!((peers[0].time_limit_s, peers[0].workers), (900.0, 8));
}

/// Within 10 s: A proves j301_1 (0.5 s), not j301_2 (12 s) nor the `Feasible` j301_3;
/// B proves j301_1 (10 s, at the limit) and j301_3 (9.99 s), not the `Solution` j301_2.
/// Within their own limits: A proves 2, B 2.
#[test]
fn counts_proofs_within_a_limit_and_the_runs_own() {
    let peers = parse_peers(&csv(), "peers.csv").unwrap();
    let rows = [
        row("j301_1", "optimal", 0.1),
        row("j301_2", "optimal", 10.5),
        row("j301_3", "feasible", 10.0),
    ];
    let r = reference_runs(&peers, &rows, own(Some(10.0)), "peers.csv");
    let counts: Vec<_> = r
        .runs
        .iter()
        .map(|p| {
            (
                p.run.as_str(),
                p.set.as_str(),
                p.instances,
                p.proven_within_time_limit,
                p.proven_within_own_limit,
            )
        })
        .collect();
    assert_eq!(
        counts,
        [
            ("a_8w", "j30", 3, Some(1), 2),
            ("b_4w", "j30", 3, Some(2), 2)
        ]
    );
    assert_eq!(r.concerto.len(), 1);
    // j301_2 is optimal, but after 10 s: not within the limit.
    assert_eq!(r.concerto[0].proven_within_time_limit, Some(1));
    assert_eq!((r.concerto[0].instances, r.concerto[0].proven), (3, 2));
    let table = r.table();
    assert!(table.contains("Proven optimal within 10 s"), "{table}");
    assert!(table.contains("2 within 900 s"), "{table}");
    assert!(!table.contains("subset"), "{table}");
}

/// A bench of two instances counts the peers on those two only, and says so.
#[test]
fn counts_only_the_instances_the_bench_ran() {
    let peers = parse_peers(&csv(), "peers.csv").unwrap();
    let rows = [row("j301_2", "optimal", 1.0), row("j301_3", "optimal", 1.0)];
    let r = reference_runs(&peers, &rows, own(Some(10.0)), "peers.csv");
    let b = r.runs.iter().find(|p| p.run == "b_4w").unwrap();
    assert_eq!((b.instances, b.set_instances), (2, 3));
    assert_eq!(
        (b.proven_within_time_limit, b.proven_within_own_limit),
        (Some(1), 1)
    );
    let a = r.runs.iter().find(|p| p.run == "a_8w").unwrap();
    assert_eq!(
        (a.instances, a.set_instances, a.proven_within_time_limit),
        (2, 3, Some(0))
    );
    assert!(
        r.table().contains("This run solved a subset"),
        "{}",
        r.table()
    );
    // The j60 row of `a_8w` is of no instance the bench ran.
    assert!(r.runs.iter().all(|p| p.set == "j30"));
}

/// Without a time limit, the peers are counted within their own limits only.
#[test]
fn a_work_limited_run_has_no_same_time_count() {
    let peers = parse_peers(&csv(), "peers.csv").unwrap();
    let rows = [
        row("j301_1", "optimal", 30.0),
        row("j601_1", "feasible", 1.0),
    ];
    let r = reference_runs(&peers, &rows, own(None), "peers.csv");
    assert!(r.runs.iter().all(|p| p.proven_within_time_limit.is_none()));
    let sets: Vec<_> = r
        .concerto
        .iter()
        .map(|o| (o.set.as_str(), o.proven))
        .collect();
    assert_eq!(sets, [("j30", 1), ("j60", 0)]);
    let table = r.table();
    assert!(table.contains("no same-time comparison"), "{table}");
    assert!(table.contains("1 (work-limited)"), "{table}");
}

#[test]
fn only_proofs_count() {
    let mut p = parse_peers(&csv(), "peers.csv").unwrap().remove(0);
    for (status, proven) in [
        ("Optimal", true),
        ("optimum", true),
        ("Feasible", false),
        ("Solution", false),
        ("Unknown", false),
        ("Infeasible", false),
    ] {
        p.status = status.into();
        assert_eq!(p.is_proven(), proven, "{status}");
    }
    p.status = "Optimal".into();
    assert!(p.proven_within(0.5) && !p.proven_within(0.49));
}

#[test]
fn a_malformed_line_is_an_error_naming_it() {
    let bad = |from: &str, to: &str| {
        let text = csv().replacen(from, to, 1);
        parse_peers(&text, "peers.csv").unwrap_err().to_string()
    };
    let e = bad("12.0,900", "soon,900");
    assert!(e.starts_with("peers.csv:3:"), "{e}");
    assert!(e.contains("`time_s`") && e.contains("`soon`"), "{e}");
    let e = bad("0.5,900,8,cluster", "0.5,900,8");
    assert!(e.starts_with("peers.csv:2:"), "{e}");
    assert!(e.contains("12 cells"), "{e}");
    let e = bad("9.99,600,4", "9.99,600,four");
    assert!(e.starts_with("peers.csv:8:") && e.contains("`four`"), "{e}");
    let e = bad("j301_2,Solution", "j301_1,Solution");
    assert!(
        e.starts_with("peers.csv:7:") && e.contains("first on line 6"),
        "{e}"
    );
    let e = bad("12.0,900,8", "12.0,300,8");
    assert!(
        e.starts_with("peers.csv:3:") && e.contains("time_limit_s"),
        "{e}"
    );
    let e = bad(
        ",\"0.9, beta\",b_4w,j30,j301_3",
        ",\"0.9, beta,b_4w,j30,j301_3",
    );
    assert!(
        e.starts_with("peers.csv:8:") && e.contains("closing quote"),
        "{e}"
    );
    let e = bad("time_limit_s", "limit_s");
    assert!(
        e.starts_with("peers.csv:1:") && e.contains("`time_limit_s`"),
        "{e}"
    );
    let e = parse_peers("\n", "peers.csv").unwrap_err().to_string();
    assert!(e.starts_with("peers.csv:1:1:"), "{e}");
}

#[test]
fn reads_gzipped_and_names_a_missing_file() {
    let dir = std::env::temp_dir().join(format!("concerto-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("peers.csv.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, csv().as_bytes()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    assert_eq!(read_peers(&path).unwrap().len(), 7);
    let missing = dir.join("none.csv.gz");
    let e = read_peers(&missing).unwrap_err().to_string();
    assert!(e.contains("none.csv.gz"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
