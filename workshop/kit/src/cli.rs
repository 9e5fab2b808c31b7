//! clap in the participant's language. clap prints its own `--help` and usage errors in
//! English; a participant whose locale is Japanese gets them from the catalogue instead: the
//! help texts (both languages, from one table per binary), the headings, and one line per
//! usage error. `workshop/tools` includes this file by path, as it does the catalogue.

use std::ffi::OsString;

use clap::error::{ContextKind, ErrorKind};
use clap::{Command, CommandFactory, FromArgMatches};

use crate::messages::{self as m, Lang, Msg};
use crate::t;

/// The help texts of a binary: (subcommand, argument id, text). The subcommand "" is the
/// binary itself and "*" every command; the argument "" is the command's about.
pub type Help = [(&'static str, &'static str, Msg)];

/// Parses the command line as [`Parser::parse`](clap::Parser::parse) does, in the
/// participant's language: the language is chosen first (clap prints before `main` could
/// read `--lang` from what it parsed).
pub fn parse<T: CommandFactory + FromArgMatches>(help: &Help) -> T {
    let args: Vec<OsString> = std::env::args_os().collect();
    m::choose(lang_flag(&args).as_deref());
    let mut command = localized(T::command(), help);
    command
        .try_get_matches_from_mut(args)
        .and_then(|matches| T::from_arg_matches(&matches))
        .unwrap_or_else(|error| exit(error))
}

/// The value of `--lang X` or `--lang=X`, read by hand before clap parses.
fn lang_flag(args: &[OsString]) -> Option<String> {
    let args: Vec<&str> = args.iter().filter_map(|arg| arg.to_str()).collect();
    args.iter()
        .enumerate()
        .find_map(|(at, arg)| match arg.strip_prefix("--lang") {
            Some("") => args.get(at + 1).map(|value| value.to_string()),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        })
}

/// The command with the texts of `help`, and in Japanese clap's headings too.
fn localized(mut command: Command, help: &Help) -> Command {
    // Building adds --help, --version and the help subcommand, so they get their texts too.
    command.build();
    dressed(command, "", help)
}

fn text(help: &Help, command: &str, arg: &str) -> Option<&'static str> {
    help.iter()
        .find(|(c, a, _)| (*c == command || *c == "*") && *a == arg)
        .map(|(_, _, msg)| msg.as_str())
}

/// The command and its subcommands (`help` has a copy of them all) with their texts.
fn dressed(command: Command, name: &str, help: &Help) -> Command {
    let japanese = m::lang() == Lang::Ja;
    let command = command.mut_subcommands(|sub| {
        let name = sub.get_name().to_string();
        dressed(sub, &name, help)
    });
    let command = match text(help, name, "") {
        Some(about) => command.about(about).long_about(None),
        None => command,
    };
    let command = command.mut_args(|arg| {
        let arg = match text(help, name, arg.get_id().as_str()) {
            Some(said) => arg.help(said).long_help(None),
            None => arg,
        };
        if !japanese {
            return arg;
        }
        // clap writes "[default: 3]" and "[possible values: …]" in English: the Japanese
        // help texts say them.
        let heading = if arg.is_positional() {
            m::CLI_ARGUMENTS
        } else {
            m::CLI_OPTIONS
        };
        arg.help_heading(heading.as_str())
            .hide_default_value(true)
            .hide_possible_values(true)
    });
    if !japanese {
        return command;
    }
    // clap's default template, with the usage heading from the catalogue.
    let template = format!(
        "{{before-help}}{{about-with-newline}}\n{} {{usage}}\n\n{{all-args}}{{after-help}}",
        m::CLI_USAGE.as_str()
    );
    command
        .help_template(template)
        .subcommand_help_heading(m::CLI_COMMANDS.as_str())
}

/// Exits as clap does (code 2 for a usage error), with the error in the participant's
/// language; help and version print as usual.
fn exit(error: clap::Error) -> ! {
    let as_usual = matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if as_usual || m::lang() == Lang::En {
        error.exit()
    }
    eprintln!("{}", t!(m::ERROR, message = usage_error(&error)));
    std::process::exit(error.exit_code())
}

/// One line for a usage error, naming the argument or value clap found wrong.
fn usage_error(error: &clap::Error) -> String {
    let context = |kind| {
        error
            .get(kind)
            .map(|value| value.to_string())
            .unwrap_or_default()
    };
    let arg = context(ContextKind::InvalidArg);
    let value = context(ContextKind::InvalidValue);
    let said = match error.kind() {
        ErrorKind::UnknownArgument => t!(m::CLI_UNKNOWN_ARGUMENT, arg = arg),
        ErrorKind::InvalidSubcommand => t!(
            m::CLI_UNKNOWN_COMMAND,
            command = context(ContextKind::InvalidSubcommand)
        ),
        ErrorKind::InvalidValue if value.is_empty() => t!(m::CLI_VALUE_REQUIRED, arg = arg),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            t!(m::CLI_INVALID_VALUE, arg = arg, value = value)
        }
        ErrorKind::MissingRequiredArgument => t!(m::CLI_MISSING_ARGUMENT, arg = arg),
        ErrorKind::ArgumentConflict => t!(
            m::CLI_CONFLICT,
            arg = arg,
            other = context(ContextKind::PriorArg)
        ),
        _ => m::CLI_INVALID_COMMAND_LINE.text(),
    };
    let suggested = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
        .into_iter()
        .find_map(|kind| error.get(kind))
        .map(|value| t!(m::CLI_DID_YOU_MEAN, suggested = value))
        .unwrap_or_default();
    format!("{said}{suggested}{}", m::CLI_SEE_HELP.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn lang_is_read_in_both_spellings_anywhere_on_the_line() {
        assert_eq!(lang_flag(&args("w --lang ja run")), Some("ja".into()));
        assert_eq!(
            lang_flag(&args("w run --help --lang=en")),
            Some("en".into())
        );
        assert_eq!(lang_flag(&args("w run --help")), None);
        assert_eq!(lang_flag(&args("w run --lang")), None);
    }
}
