//! Every sentence the learner track's tools print, in English and Japanese: one catalogue (a
//! table per tool or stage, joined in [`ALL`]), so that a message cannot exist in one language
//! only (a test walks [`ALL`]), and the placeholders of both must match. The workshop's first
//! audience is Japanese; kubectl's and the API server's own words, Kubernetes and Rust terms, commands and names stay as they are.
//!
//! A table in code rather than rust-i18n or Fluent: no new crate in a build every participant
//! makes offline on a laptop, a misspelt message is a compile error (not a key printed at run
//! time), and the messages need no plural rules (Japanese has none; English ones are chosen in
//! code). `workshop/tools` includes this module by path: one catalogue for both crates.
//!
//! The language is the process's, chosen once by the binaries ([`choose`]): `--lang ja|en`,
//! else the locale (`LC_ALL`, `LC_MESSAGES`, `LANG`, the first set, as gettext reads them)
//! starting with `ja`. Libraries and tests that set nothing speak English.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

/// A language the tools speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Ja,
}

static JAPANESE: AtomicBool = AtomicBool::new(false);

/// The language of `--lang` if given, else of the locale variables (in gettext's order).
pub fn detect(flag: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Lang {
    let chosen = match flag {
        Some(flag) => Some(flag.to_string()),
        None => ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .filter_map(var)
            .find(|value| !value.is_empty()),
    };
    match chosen {
        Some(value) if value.to_ascii_lowercase().starts_with("ja") => Lang::Ja,
        _ => Lang::En,
    }
}

/// Sets the process's language from `--lang` and the environment; returns it.
pub fn choose(flag: Option<&str>) -> Lang {
    let lang = detect(flag, |name| std::env::var(name).ok());
    JAPANESE.store(lang == Lang::Ja, Ordering::Relaxed);
    lang
}

/// The process's language.
pub fn lang() -> Lang {
    if JAPANESE.load(Ordering::Relaxed) {
        Lang::Ja
    } else {
        Lang::En
    }
}

/// One message in both languages; `{name}` marks where a value goes.
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    pub key: &'static str,
    pub en: &'static str,
    pub ja: &'static str,
}

impl Msg {
    /// The text in `lang`, its placeholders filled from `args`.
    pub fn render(&self, lang: Lang, args: &[(&str, &dyn Display)]) -> String {
        let mut text = match lang {
            Lang::En => self.en,
            Lang::Ja => self.ja,
        }
        .to_string();
        for (name, value) in args {
            text = text.replace(&format!("{{{name}}}"), &value.to_string());
        }
        text
    }

    /// The text in the process's language.
    pub fn fill(&self, args: &[(&str, &dyn Display)]) -> String {
        self.render(lang(), args)
    }

    /// The text in the process's language, without placeholders, for clap (which keeps
    /// `'static` headings).
    pub fn as_str(&self) -> &'static str {
        match lang() {
            Lang::En => self.en,
            Lang::Ja => self.ja,
        }
    }

    /// The text in the process's language, for a message without placeholders.
    pub fn text(&self) -> String {
        self.fill(&[])
    }
}

/// `t!(KEY, name = value, …)`: the message in the process's language with its values.
#[macro_export]
macro_rules! t {
    ($msg:expr $(, $name:ident = $value:expr)* $(,)?) => {
        $msg.fill(&[$((stringify!($name), &$value as &dyn ::std::fmt::Display)),*])
    };
}

/// `messages! { NAME; KEY: "English", "日本語"; … }`: a const per message, and `NAME`, the
/// list of them, which [`ALL`] joins.
macro_rules! messages {
    ($all:ident; $($key:ident: $en:expr, $ja:expr;)*) => {
        $(pub const $key: Msg = Msg { key: stringify!($key), en: $en, ja: $ja };)*
        /// This file's messages, in order, for [`super::ALL`].
        pub(super) const $all: &[Msg] = &[$($key),*];
    };
}

// The messages by what prints them; a message's name stays `messages::KEY`.
mod check;
mod cli;
mod cluster;
mod doctor;
mod organiser;
mod room;
mod run;
mod tools;

pub use check::*;
pub use cli::*;
pub use cluster::*;
pub use doctor::*;
pub use organiser::*;
pub use room::*;
pub use run::*;
pub use tools::*;

/// The tables, in the order of their texts' stages: the check, the runner, the room, the
/// organiser's commands, connecting, the tools, clap, the doctor.
const TABLES: &[&[Msg]] = &[
    check::CHECK,
    run::RUN,
    room::ROOM,
    organiser::ORGANISER,
    cluster::CLUSTER,
    tools::TOOLS,
    cli::CLI,
    doctor::DOCTOR,
];

/// Every message, for the test that each has both languages.
pub const ALL: &[Msg] = &join::<{ count(TABLES) }>(TABLES);

/// How many messages `tables` hold together.
const fn count(tables: &[&[Msg]]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < tables.len() {
        total += tables[i].len();
        i += 1;
    }
    total
}

/// `tables` one after the other, at compile time (a `const` slice cannot be concatenated
/// otherwise); `N` is their [`count`].
const fn join<const N: usize>(tables: &[&[Msg]]) -> [Msg; N] {
    const BLANK: Msg = Msg {
        key: "",
        en: "",
        ja: "",
    };
    let mut all = [BLANK; N];
    let mut at = 0;
    let mut i = 0;
    while i < tables.len() {
        let mut j = 0;
        while j < tables[i].len() {
            all[at] = tables[i][j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locale_picks_japanese_in_gettexts_order_and_the_flag_wins() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(detect(None, env(&[("LANG", "ja_JP.UTF-8")])), Lang::Ja);
        assert_eq!(
            detect(None, env(&[("LC_ALL", "C"), ("LANG", "ja_JP.UTF-8")])),
            Lang::En
        );
        assert_eq!(
            detect(None, env(&[("LC_ALL", ""), ("LC_MESSAGES", "ja_JP")])),
            Lang::Ja
        );
        assert_eq!(detect(Some("ja"), env(&[("LANG", "C")])), Lang::Ja);
        assert_eq!(detect(Some("en"), env(&[("LANG", "ja_JP")])), Lang::En);
        assert_eq!(detect(None, env(&[])), Lang::En);
    }

    /// The `{name}`s of a template, sorted.
    fn placeholders(template: &str) -> Vec<&str> {
        let mut names: Vec<&str> = template
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        names.sort_unstable();
        names
    }

    fn japanese(text: &str) -> bool {
        text.chars()
            .any(|c| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}'))
    }

    /// What is left of a template without its placeholders: words to translate, if any.
    fn words(template: &str) -> bool {
        let mut rest = template.to_string();
        for name in placeholders(template) {
            rest = rest.replace(&format!("{{{name}}}"), "");
        }
        rest.chars().any(|c| c.is_ascii_alphabetic())
    }

    #[test]
    fn every_message_has_both_languages_with_the_same_placeholders() {
        let mut wrong = Vec::new();
        for msg in ALL {
            if msg.en.trim().is_empty() || msg.ja.trim().is_empty() {
                wrong.push(format!("{}: a language is empty", msg.key));
            }
            if placeholders(msg.en) != placeholders(msg.ja) {
                wrong.push(format!(
                    "{}: placeholders {:?} in English, {:?} in Japanese",
                    msg.key,
                    placeholders(msg.en),
                    placeholders(msg.ja)
                ));
            }
            if japanese(msg.en) {
                wrong.push(format!("{}: the English text has Japanese in it", msg.key));
            }
            if words(msg.en) && !japanese(msg.ja) {
                wrong.push(format!("{}: the Japanese text is not Japanese", msg.key));
            }
        }
        let mut keys: Vec<&str> = ALL.iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), ALL.len(), "a key is defined twice");
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_message_is_filled_in_the_language_asked() {
        let args: &[(&str, &dyn Display)] = &[("passed", &1), ("failed", &11)];
        assert_eq!(SUMMARY.render(Lang::En, args), "1 passed, 11 failed");
        assert_eq!(SUMMARY.render(Lang::Ja, args), "合格 1 件、不合格 11 件");
    }
}
