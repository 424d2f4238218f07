//! Eight bytes of a JSON string at a time: which of them end a run of
//! plain content (the lexer's inner loop, without `unsafe` or SIMD).

const LO: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;

/// The top bit of each byte of the result is set when that byte of `w` is
/// not zero (no carry crosses bytes, so every byte's answer is exact).
#[inline]
fn nonzero(w: u64) -> u64 {
    ((w & LOW7) + LOW7) | w
}

/// The bytes of `w` (eight bytes of a JSON string, little-endian) that end a
/// run of plain string content: `"`, `\\` and control characters (below
/// 0x20) have the top bit set in the result, and only they, so a caller can
/// go from one to the next without reading the word again.
#[inline]
pub(crate) fn string_specials(w: u64) -> u64 {
    let not_quote = nonzero(w ^ (LO * u64::from(b'"')));
    let not_backslash = nonzero(w ^ (LO * u64::from(b'\\')));
    // 0x20 and above: the low seven bits reach 0x80 with 0x60 added, or the top bit is set.
    let not_control = ((w & LOW7) + LO * 0x60) | w;
    !(not_quote & not_backslash & not_control) & HI
}

#[cfg(test)]
mod specials_tests {
    #[test]
    fn every_byte_is_judged_alone() {
        let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
        let fillers = [
            b'a', b'"', 0x00, 0x1f, b'\\', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x5d,
        ];
        for b in 0..=255u8 {
            for at in 0..8 {
                for &fill in &fillers {
                    let mut word = [fill; 8];
                    word[at] = b;
                    let m = super::string_specials(u64::from_le_bytes(word));
                    for (i, &c) in word.iter().enumerate() {
                        let set = m >> (i * 8 + 7) & 1 == 1;
                        assert_eq!(set, special(c), "byte {c:#x} at {i} of {word:x?}");
                    }
                    assert_eq!(m & !super::HI, 0);
                }
            }
        }
    }
}
