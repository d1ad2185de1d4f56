//! Inputs the fuzz targets `psplib_sm` and `patterson_rcp` (`extract/fuzz`, run by
//! `scripts/fuzz`) found to crash or exhaust a reader, each kept with the clear error it now
//! gets.

use concerto_rcpsp::io::{patterson, psplib};
use concerto_rcpsp::ReadError;

/// A count of 4e15 resources reserved 4e15 capacities before reading any (an allocation past
/// what the machine has); now the capacities run out at the end of the file.
#[test]
fn a_huge_resource_count_in_a_rcp_file_is_an_error_not_an_allocation() {
    let text = "4 4000000000000002\n\n30 1 \n0 0\n0 0 \n\n7 0 \n\n7 5 1  0 0";
    let e = patterson::parse(text, "crash.rcp").unwrap_err();
    assert!(matches!(e, ReadError::Syntax { .. }), "{e}");
    assert!(e.to_string().contains("crash.rcp"), "{e}");
    // Huge activity and successor counts too.
    for text in [
        "4000000000000002 1\n5\n0 0 0",
        "2 1\n5\n0 0 4000000000000002 2\n0 0 0",
    ] {
        let e = patterson::parse(text, "crash.rcp").unwrap_err();
        assert!(matches!(e, ReadError::Syntax { .. }), "{e}");
    }
}

/// A PSPLIB header counting more jobs or renewable resources than the file has words.
#[test]
fn a_psplib_count_past_the_file_is_an_error_naming_its_line() {
    let plain = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/psplib/j30/j301_1.sm"
    ))
    .unwrap();
    for (from, to) in [
        (
            "  - renewable                 :  4   R",
            "  - renewable                 :  4000000000000   R",
        ),
        (
            "jobs (incl. supersource/sink ):  32",
            "jobs (incl. supersource/sink ):  32000000000000",
        ),
    ] {
        assert!(plain.contains(from), "{from}");
        let text = plain.replace(from, to);
        let e = psplib::parse(&text, "big.sm").unwrap_err();
        assert!(matches!(e, ReadError::Syntax { .. }), "{e}");
        assert!(e.to_string().contains("big.sm"), "{e}");
        assert!(e.to_string().contains("the file has"), "{e}");
    }
}
