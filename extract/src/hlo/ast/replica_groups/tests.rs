use super::*;
use crate::hlo::ast::Pos;

fn attr(name: &str, value: &str) -> Attribute {
    Attribute {
        name: name.into(),
        value: value.into(),
        pos: Pos { line: 3, column: 7 },
    }
}

#[test]
fn replica_groups_in_both_forms() {
    let e = attr("replica_groups", "{{0,1},{2,3}}")
        .replica_groups()
        .unwrap();
    assert_eq!(e.expand(), vec![vec![0, 1], vec![2, 3]]);
    let i = attr("replica_groups", "[1,8]<=[8]")
        .replica_groups()
        .unwrap();
    assert_eq!(i.expand(), vec![(0..8).collect::<Vec<u64>>()]);
    let t = attr("replica_groups", "[2,4]<=[4,2]T(1,0)")
        .replica_groups()
        .unwrap();
    assert_eq!(t.expand(), vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
    let err = attr("replica_groups", "[3,4]<=[8]")
        .replica_groups()
        .unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    assert!(attr("replica_groups", "{{0,x}}").replica_groups().is_err());
    assert!(attr("replica_groups", "[2,4]<=[4,2]T(0,0)")
        .replica_groups()
        .is_err());
}

fn groups(value: &str) -> Vec<Vec<u64>> {
    attr("replica_groups", value)
        .replica_groups()
        .unwrap_or_else(|e| panic!("{value}: {e}"))
        .expand()
}

/// The examples of XLA's `xla/hlo/ir/replica_group_test.cc`
/// (`MeshAxesReplicaGroupListTest.MaterializedReplicaGroups*`).
#[test]
fn mesh_form_expands_as_xla_does() {
    // A 2x2 mesh: a group spans the listed axes and fixes the others.
    assert_eq!(groups("mesh['x'=2,'y'=2] {'x'}"), [[0, 2], [1, 3]]);
    assert_eq!(groups("mesh['x'=2,'y'=2] {'y'}"), [[0, 1], [2, 3]]);
    assert_eq!(groups("mesh['x'=2,'y'=2] {'x','y'}"), [[0, 1, 2, 3]]);
    // The first listed axis is the most major inside a group.
    assert_eq!(groups("mesh['x'=2,'y'=2] {'y','x'}"), [[0, 2, 1, 3]]);
    // What JAX 0.10 writes for 8 devices: one group of all of them, or groups of one.
    assert_eq!(
        groups("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}"),
        [(0..8).collect::<Vec<u64>>()]
    );
    assert_eq!(
        groups("mesh['axis_0'=8,'axis_1'=1] {'axis_1'}"),
        (0..8).map(|d| vec![d]).collect::<Vec<_>>()
    );
    // Sub-axes of a 6x6 mesh.
    let a_1_2: Vec<Vec<u64>> = (0..18).map(|d| vec![d, d + 18]).collect();
    assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(1)2}"), a_1_2);
    let a_1_3: Vec<Vec<u64>> = (0..12).map(|d| vec![d, d + 12, d + 24]).collect();
    assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(1)3}"), a_1_3);
    let a_3_2: Vec<Vec<u64>> = [0, 12, 24]
        .iter()
        .flat_map(|&base| (0..6).map(move |d| vec![base + d, base + d + 6]))
        .collect();
    assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(3)2}"), a_3_2);
    let b_1_3: Vec<Vec<u64>> = (0..6)
        .flat_map(|row| (0..2).map(move |d| vec![row * 6 + d, row * 6 + d + 2, row * 6 + d + 4]))
        .collect();
    assert_eq!(groups("mesh['a'=6,'b'=6] {'b':(1)3}"), b_1_3);
    assert_eq!(
        groups("mesh['a'=6,'b'=6] {'a':(1)2,'b':(1)2}")[..3],
        [[0, 3, 18, 21], [1, 4, 19, 22], [2, 5, 20, 23]]
    );
    assert_eq!(
        groups("mesh['a'=6,'b'=6] {'a':(1)3,'b':(1)3}")[0],
        [0, 2, 4, 12, 14, 16, 24, 26, 28]
    );
    // Listed the other way round: the same devices, `b` now most major.
    assert_eq!(
        groups("mesh['a'=6,'b'=6] {'b':(1)3,'a':(1)3}")[0],
        [0, 12, 24, 2, 14, 26, 4, 16, 28]
    );
    assert_eq!(
        groups("mesh['a'=6,'b'=6] {'a':(3)2,'b':(3)2}")[..2],
        [[0, 1, 6, 7], [2, 3, 8, 9]]
    );
    // A non-iota device order: the groups take the devices at the mesh positions.
    assert_eq!(
        groups("mesh['x'=2,'y'=2], device_ids=(3,1,0,2) {'x'}"),
        [[3, 0], [1, 2]]
    );
    assert_eq!(
        groups("mesh['x'=2,'y'=2], device_ids=(3,1,0,2) {'y'}"),
        [[3, 1], [0, 2]]
    );
    // Device ids in the iota form: iota(4).reshape(2,2).transpose(1,0) = 0,2,1,3.
    assert_eq!(
        groups("mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)) {'y'}"),
        [[0, 2], [1, 3]]
    );
    // A maximal mesh is one device; an empty mesh has none.
    assert_eq!(groups("maximal_mesh[device_id=5] {}"), [[5]]);
    assert!(groups("mesh[] {}").is_empty());
    // Whitespace and double quotes are accepted, as XLA's lexer accepts them.
    assert_eq!(
        groups(" mesh [ \"x\" = 2 , 'y'=2 ]\n { \"x\" } "),
        [[0, 2], [1, 3]]
    );
    // An axis may be named by its index.
    assert_eq!(groups("mesh['x'=2,'y'=2] {'1'}"), [[0, 1], [2, 3]]);
}

/// XLA's `MaterializedReplicaGroupsMatchExpectedV2`: a sub-axis of `mesh['a'=8]` equals
/// an iota form.
#[test]
fn mesh_sub_axes_match_the_iota_form() {
    for (mesh, iota) in [
        ("{'a':(1)2}", "[4,2]<=[2,4]T(1,0)"),
        ("{'a':(1)4}", "[2,4]<=[4,2]T(1,0)"),
        ("{'a':(2)2}", "[4,2]<=[2,2,2]T(0,2,1)"),
        ("{'a':(2)4}", "[2,4]<=[8]"),
        ("{'a':(4)2}", "[4,2]<=[8]"),
        ("{'a':(1)2,'a':(4)2}", "[2,4]<=[2,2,2]T(1,0,2)"),
        ("{'a':(4)2,'a':(1)2}", "[2,4]<=[2,2,2]T(1,2,0)"),
        ("{'a'}", "[1,8]<=[8]"),
    ] {
        assert_eq!(
            groups(&format!("mesh['a'=8] {mesh}")),
            groups(iota),
            "{mesh} vs {iota}"
        );
    }
    // The printer's examples from `MeshAxesToString` parse and expand to whole groups.
    for (value, count, size) in [
        ("mesh['u'=10,'v'=12,'w'=15] {'u','v'}", 15, 120),
        (
            "mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)) {'a','b':(1)2,'d'}",
            8,
            8,
        ),
        (
            "mesh['ooo'=10], device_ids=(8,3,7,5,4,2,6,0,1,9) {'ooo':(5)2}",
            5,
            2,
        ),
        ("mesh['X'=21,'Y'=10] {'X':(3)7,'Y':(1)5}", 6, 35),
        (
            "mesh['U'=40,'Q'=6,'V'=210] {'U','V':(1)21,'Q':(2)3,'V':(21)10}",
            2,
            25200,
        ),
    ] {
        let g = groups(value);
        assert_eq!((g.len(), g[0].len()), (count, size), "{value}");
        let mut all: Vec<u64> = g.concat();
        all.sort_unstable();
        assert!(all.iter().copied().eq(0..(count * size) as u64), "{value}");
    }
    // `'ooo':(5)2` views the axis as [5, 2, 1]: a group is two neighbouring positions of
    // the device list.
    assert_eq!(
        groups("mesh['ooo'=10], device_ids=(8,3,7,5,4,2,6,0,1,9) {'ooo':(5)2}"),
        [[8, 3], [7, 5], [4, 2], [6, 0], [1, 9]]
    );
}

/// The all-gather of each replica's id over mesh-form groups, as XLA (jaxlib 0.10.2, CPU,
/// 8 replicas) computed it at run time with `fixtures/hlo/xla_groups.py`: replica r's
/// result is its group, in group order; here the distinct results, sorted. (Forms with
/// `device_ids=` are left out: that script's conversion drops the device ids.)
#[test]
fn mesh_groups_match_xla_at_run_time() {
    let cases = [
        ("mesh['x'=2,'y'=4] {'x'}", "0,4 1,5 2,6 3,7"),
        ("mesh['x'=2,'y'=4] {'y'}", "0,1,2,3 4,5,6,7"),
        ("mesh['x'=2,'y'=4] {'x','y'}", "0,1,2,3,4,5,6,7"),
        ("mesh['x'=2,'y'=4] {'y','x'}", "0,4,1,5,2,6,3,7"),
        ("mesh['x'=2,'y'=4] {'y':(1)2}", "0,2 1,3 4,6 5,7"),
        ("mesh['x'=2,'y'=4] {'y':(2)2}", "0,1 2,3 4,5 6,7"),
        ("mesh['x'=2,'y'=4] {'x','y':(2)2}", "0,1,4,5 2,3,6,7"),
        ("mesh['x'=2,'y'=4] {'y':(2)2,'x'}", "0,4,1,5 2,6,3,7"),
        ("mesh['x'=2,'y'=4] {'y':(1)2,'x'}", "0,4,2,6 1,5,3,7"),
        ("mesh['a'=8] {'a':(1)2}", "0,4 1,5 2,6 3,7"),
        ("mesh['a'=8] {'a':(2)2}", "0,2 1,3 4,6 5,7"),
        ("mesh['a'=8] {'a':(4)2}", "0,1 2,3 4,5 6,7"),
        ("mesh['a'=8] {'a':(1)4}", "0,2,4,6 1,3,5,7"),
        ("mesh['a'=8] {'a':(2)4}", "0,1,2,3 4,5,6,7"),
        ("mesh['a'=8] {'a':(1)2,'a':(4)2}", "0,1,4,5 2,3,6,7"),
        ("mesh['a'=8] {'a':(4)2,'a':(1)2}", "0,4,1,5 2,6,3,7"),
        ("mesh['x'=2,'y'=2,'z'=2] {'z','x'}", "0,4,1,5 2,6,3,7"),
        ("mesh['x'=2,'y'=2,'z'=2] {'y'}", "0,2 1,3 4,6 5,7"),
        ("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}", "0,1,2,3,4,5,6,7"),
    ];
    for (value, expected) in cases {
        let mut ours: Vec<String> = groups(value)
            .iter()
            .map(|g| g.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            .collect();
        ours.sort_unstable();
        assert_eq!(ours.join(" "), expected, "{value}");
    }
}

#[test]
fn malformed_mesh_forms_are_errors_naming_the_attribute() {
    for (value, fragment) in [
        ("mesh['x'=2,'y'=2] {'z'}", "'z' is not an axis"),
        ("mesh['x'=2,'y'=2] {'2'}", "'2' is not an axis"),
        ("mesh['x'=2,'y'=2]", "expected `{`"),
        ("mesh['x'=2,'y'=2] {'x'} junk", "expected the end"),
        ("mesh['x'=2,'x'=2] {'x'}", "appears twice"),
        ("mesh['x'=0] {}", "size 0"),
        (
            "mesh['x'=4], device_ids=(0,1,2) {'x'}",
            "expected 4 device ids",
        ),
        (
            "mesh['x'=4], device_ids=(0,1,2,2) {'x'}",
            "not a permutation",
        ),
        ("mesh['x'=4], device_ids=([2,3]) {'x'}", "do not hold"),
        (
            "mesh['x'=4], device_ids=([2,2]T(0,0)) {'x'}",
            "not a permutation",
        ),
        ("mesh['x'=4], device_ds=(0,1,2,3) {'x'}", "device_ids"),
        ("mesh['x'=6] {'x':(4)2}", "does not fit"),
        ("mesh['x'=6] {'x':(1)6}", "does not fit"),
        ("mesh['x'=8] {'x':(1)4,'x':(2)2}", "overlap"),
        ("mesh['x'=8] {'x','x':(2)2}", "more than once"),
        ("mesh['x=2] {}", "unterminated"),
        ("maximal_mesh[device_id=1] {'x'}", "not an axis"),
        ("maximal_mesh[id=1] {}", "device_id"),
        ("mesh['x'=99999999999] {}", "more than"),
        (
            "mesh['x'=99999999999999999999] {}",
            "does not fit in 64 bits",
        ),
    ] {
        let e = attr("replica_groups", value).replica_groups().unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains(fragment) && m.contains("line 3, column 7") && m.contains("replica_groups"),
            "{value}: {m}"
        );
    }
}
