//! The configuration `tattler_open` reads: what is wrong with a bad one, in
//! the caller's error buffer.

use std::ffi::CString;
use std::ptr::{self, null_mut};

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

#[test]
fn bad_configurations_say_what_is_wrong() {
    let cases: [(&[u8], tattler_status, &str); 6] = [
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"p\xffds\"]}",
            TATTLER_ERR_INVALID_UTF8,
            "not UTF-8",
        ),
        (b"{not json", TATTLER_ERR_INVALID_CONFIG, "JSON"),
        (b"[]", TATTLER_ERR_INVALID_CONFIG, "JSON"),
        (
            b"{\"server\":5,\"resources\":[\"pods\"]}",
            TATTLER_ERR_INVALID_CONFIG,
            "`server`",
        ),
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"pods\"],\"tokn\":\"x\"}",
            TATTLER_ERR_INVALID_CONFIG,
            "`tokn`",
        ),
        (
            b"{\"server\":\"http://127.0.0.1:1\",\"resources\":[\"pods!\"]}",
            TATTLER_ERR_INVALID_RESOURCE,
            "\"pods!\"",
        ),
    ];
    for (json, status, needle) in cases {
        let json = CString::new(json).unwrap();
        let sentinel = ptr::dangling_mut::<tattler_reader>();
        let mut r = sentinel;
        let mut err = [0u8; 512];
        // SAFETY: valid string, out-pointer and buffer.
        let st = unsafe { tattler_open(json.as_ptr(), &mut r, err.as_mut_ptr().cast(), err.len()) };
        let msg = text(&err);
        assert_eq!(st, status, "{json:?}: {msg}");
        assert!(msg.contains(needle), "{json:?}: {msg:?} lacks {needle:?}");
        assert_eq!(r, sentinel, "*out written on failure");
    }
    let (st, msg) = open(
        r#"{"server":"http://127.0.0.1:1","resources":["pods"],"token_file":"/no/such/token"}"#,
    )
    .unwrap_err();
    assert_eq!(st, TATTLER_ERR_IO);
    assert!(msg.contains("/no/such/token"), "{msg}");
}

#[test]
fn error_text_is_cut_to_the_buffer() {
    let json = c"{not json";
    let mut r = null_mut();
    let mut err = [0xffu8; 8];
    // SAFETY: valid string, out-pointer and buffer.
    let st = unsafe { tattler_open(json.as_ptr(), &mut r, err.as_mut_ptr().cast(), err.len()) };
    assert_eq!(st, TATTLER_ERR_INVALID_CONFIG);
    assert_eq!(&err, b"invalid\0");
    let mut one = [0xffu8; 1];
    // SAFETY: as above.
    unsafe { tattler_open(json.as_ptr(), &mut r, one.as_mut_ptr().cast(), one.len()) };
    assert_eq!(one, [0]);
}
