//! One-time codes for transfers between strangers (magic-wormhole / croc style).
//!
//! A code is three words of the BIP-39 English list (2048 words, 11 bits each): 33 bits,
//! e.g. `crossword-puppy-orbit`. It is never sent: it is the password of a SPAKE2 exchange
//! (see `handshake`), so a network attacker gets exactly one online guess per handshake,
//! and the receiver burns the code after one failed attempt: the chance of a successful
//! attack is 2^-33 per code (magic-wormhole's codes give 2^-16 per attempt).
//!
//! Parsing is forgiving about what people type: any case, words separated by `-`, blanks
//! or both.

use core::fmt;

use bip39::Language;
use zeroize::Zeroize;

use crate::rng::SecureRandom;

/// Words in a code.
pub const CODE_WORDS: usize = 3;

/// Why a typed code was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// Not three words.
    #[error("a code is {CODE_WORDS} words separated by `-`, like `crossword-puppy-orbit`")]
    WordCount,
    /// A word is not in the list.
    #[error("`{0}` is not a code word (check the spelling)")]
    UnknownWord(String),
}

/// A one-time code.
#[derive(Clone, PartialEq, Eq, Zeroize)]
pub struct OneTimeCode {
    words: [u16; CODE_WORDS],
}

impl OneTimeCode {
    /// A fresh random code.
    pub fn generate(rng: &mut dyn SecureRandom) -> Self {
        let mut words = [0u16; CODE_WORDS];
        for w in &mut words {
            let mut b = [0u8; 2];
            rng.fill(&mut b);
            // 2048 divides 65536: masking is unbiased.
            *w = u16::from_le_bytes(b) & 0x07ff;
        }
        OneTimeCode { words }
    }

    /// Parses what a person typed.
    pub fn parse(text: &str) -> Result<Self, CodeError> {
        let list = Language::English;
        let mut words = [0u16; CODE_WORDS];
        let mut n = 0;
        for word in text
            .split(|c: char| c == '-' || c.is_whitespace())
            .filter(|w| !w.is_empty())
        {
            let slot = words.get_mut(n).ok_or(CodeError::WordCount)?;
            let lower = word.to_lowercase();
            *slot = list
                .find_word(&lower)
                .ok_or_else(|| CodeError::UnknownWord(word.chars().take(32).collect()))?;
            n += 1;
        }
        if n != CODE_WORDS {
            return Err(CodeError::WordCount);
        }
        Ok(OneTimeCode { words })
    }

    /// The SPAKE2 password: the canonical text.
    pub(crate) fn password(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for OneTimeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = Language::English.word_list();
        for (i, &w) in self.words.iter().enumerate() {
            if i > 0 {
                f.write_str("-")?;
            }
            f.write_str(list[usize::from(w & 0x07ff)])?;
        }
        Ok(())
    }
}

impl fmt::Debug for OneTimeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OneTimeCode(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeededRandom;

    #[test]
    fn generate_print_parse() {
        let mut rng = SeededRandom::from_u64(3);
        for _ in 0..100 {
            let c = OneTimeCode::generate(&mut rng);
            let text = c.to_string();
            assert_eq!(text.split('-').count(), 3);
            assert_eq!(OneTimeCode::parse(&text), Ok(c.clone()));
            let shouted = text.to_uppercase().replace('-', "  ");
            assert_eq!(OneTimeCode::parse(&shouted), Ok(c));
        }
    }

    #[test]
    fn typos_are_errors() {
        assert_eq!(
            OneTimeCode::parse("abandon-ability"),
            Err(CodeError::WordCount)
        );
        assert_eq!(
            OneTimeCode::parse("abandon-ability-able-about"),
            Err(CodeError::WordCount)
        );
        assert!(matches!(
            OneTimeCode::parse("abandon-abilty-able"),
            Err(CodeError::UnknownWord(w)) if w == "abilty"
        ));
        assert_eq!(OneTimeCode::parse(""), Err(CodeError::WordCount));
    }
}
