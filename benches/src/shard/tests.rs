//! Tests of the shard machinery: `--shard I/N` selection, shard files and their merge.

use super::*;

#[test]
fn shards_parse_validate_and_split_every_item_once() {
    let s: Shard = "1/4".parse().unwrap();
    assert_eq!((s.index(), s.count()), (1, 4));
    assert_eq!(s.to_string(), "1/4");
    assert_eq!(s.pick(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), vec![1, 5, 9]);
    assert!(matches!(
        "4/4".parse::<Shard>(),
        Err(ShardError::IndexOutOfRange { index: 4, count: 4 })
    ));
    assert!(matches!(
        "0/0".parse::<Shard>(),
        Err(ShardError::ZeroCount(_))
    ));
    for bad in ["", "1", "a/4", "-1/4", "1/4/2", "1/", "/4", "+1/4"] {
        assert!(
            matches!(bad.parse::<Shard>(), Err(ShardError::Syntax(_))),
            "{bad}"
        );
    }
    // Every item of every list length lands in exactly one shard.
    for n in 1..6 {
        for len in 0..12 {
            let mut seen = vec![0; len];
            for i in 0..n {
                for k in Shard::new(i, n).unwrap().positions(len) {
                    seen[k] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{n} shards of {len}");
        }
    }
    assert_eq!(Shard::WHOLE.pick(&["a", "b"]), vec!["a", "b"]);
}

/// A kind whose rows are numbers, named as `bench psplib`.
#[derive(Clone, Debug, PartialEq)]
struct Numbers;

impl Shardable for Numbers {
    const NAME: &'static str = "psplib";
    type Config = serde_json::Value;
    type Row = u32;
    type Unsharded = Merged<Numbers>;

    fn unsharded(merged: Merged<Numbers>) -> Merged<Numbers> {
        merged
    }
}

type File = ShardFile<Numbers>;

/// The shard files of a run over `n` items split in `count`, whose row of item `k` is
/// `10 * k`.
fn files(n: usize, count: usize) -> Vec<(PathBuf, File)> {
    let items: Vec<String> = (0..n).map(|k| format!("i{k}")).collect();
    (0..count)
        .map(|i| {
            let shard = Shard::new(i, count).unwrap();
            let rows = shard.positions(n).map(|k| 10 * k as u32).collect();
            let config = serde_json::json!({"solver": "sgs", "limits": {"time_s": 1.0}});
            let f = File::new(shard, config, items.clone(), rows).unwrap();
            (PathBuf::from(format!("s{i}.json")), f)
        })
        .collect()
}

#[test]
fn merge_puts_rows_back_in_the_unsharded_order() {
    let mut fs = files(11, 4);
    fs.reverse();
    let m = merge(fs).unwrap();
    assert_eq!(m.rows, (0..11).map(|k| 10 * k).collect::<Vec<u32>>());
    assert_eq!(m.items.len(), 11);
    // More shards than items: the empty shards still have to come.
    let m = merge(files(2, 3)).unwrap();
    assert_eq!(m.rows, vec![0, 10]);
}

#[test]
fn merge_refuses_files_that_do_not_belong_together() {
    let err = |fs: Vec<(PathBuf, File)>| merge(fs).unwrap_err().to_string();
    assert_eq!(err(Vec::new()), "no shard file to merge");

    let mut fs = files(11, 4);
    fs.remove(2);
    assert_eq!(err(fs), "missing shard(s) 2/4 of a split in 4");

    let mut fs = files(11, 4);
    fs[3] = fs[1].clone();
    fs[3].0 = "again.json".into();
    assert_eq!(err(fs), "shard 1/4 is given twice: s1.json and again.json");

    let mut fs = files(11, 4);
    fs[2].1.config["limits"]["time_s"] = 2.0.into();
    assert_eq!(
        err(fs),
        "s2.json: its configuration differs from s0.json's: `limits.time_s` is 2.0 here, \
         1.0 there"
    );

    let mut fs = files(11, 4);
    fs[1].1.bench = "scale".into();
    assert_eq!(
        err(fs),
        "s1.json: a `bench scale` shard, but s0.json is a `bench psplib` shard"
    );

    let mut fs = files(11, 4);
    fs[3].1.items[5] = "other".into();
    assert_eq!(
        err(fs),
        "s3.json: its item list differs from s0.json's: item 5 is `other` here, `i5` there"
    );

    let mut fs = files(11, 4);
    fs.push(files(11, 5).remove(4));
    assert_eq!(
        err(fs),
        "s4.json: shard 4/5 is of a split in 5, but s0.json is of a split in 4"
    );

    let mut fs = files(11, 4);
    fs[0].1.rows.pop();
    assert_eq!(
        err(fs),
        "s0.json: shard 0/4 of 11 items holds 2 rows, expected 3"
    );

    let mut fs = files(11, 4);
    fs[1].1.rows[1].index = 2;
    assert_eq!(
        err(fs),
        "s1.json: shard 1/4 of 11 items: row 1 is item 2, expected item 5"
    );

    let mut fs = files(11, 4);
    fs[0].1.format = 0;
    assert_eq!(
        err(fs),
        "s0.json: shard file format 0; this build reads format 1"
    );
}

#[test]
fn a_file_refuses_rows_that_are_not_its_shards() {
    let shard = Shard::new(0, 2).unwrap();
    let items = vec!["a".to_string(), "b".into(), "c".into()];
    assert!(File::new(shard, ().into(), items.clone(), vec![1]).is_err());
    let f = File::new(shard, ().into(), items, vec![1, 2]).unwrap();
    let json = serde_json::to_string(&f).unwrap();
    assert!(
        json.starts_with(r#"{"format":1,"bench":"psplib","shard":"0/2","#),
        "{json}"
    );
    assert_eq!(serde_json::from_str::<File>(&json).unwrap(), f);
    let bad = json.replace("\"0/2\"", "\"2/2\"");
    let e = serde_json::from_str::<File>(&bad).unwrap_err().to_string();
    assert!(e.contains("shard index 2 is out of range"), "{e}");
}
