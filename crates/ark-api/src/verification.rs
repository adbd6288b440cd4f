//! ark's record of a backup's last verification (`ark backup verify`, or the server's own), kept
//! in the Backup's annotation `ark.io/verification` as JSON: Velero's CRD has no field for it, and
//! keeps annotations as they are.

use serde::{Deserialize, Serialize};

use crate::Backup;

/// The annotation.
pub const ANNOTATION: &str = "ark.io/verification";

/// The longest defect the record keeps: the whole list is in the verifier's output.
const MAX_DEFECT_CHARS: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Passed,
    Failed,
}

/// One verification, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub outcome: Outcome,
    /// When it ended (RFC 3339, UTC).
    pub at: String,
    /// Whether every byte of the volume data was read (else its directories and a sample).
    pub data: bool,
    pub defects: u64,
    /// The first defect found, cut short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_defect: Option<String>,
    /// Who verified: `ark backup verify` or `ark-server`.
    pub by: String,
}

impl Verification {
    pub fn new(at: String, data: bool, defects: &[String], by: &str) -> Self {
        let first_defect =
            defects
                .first()
                .map(|defect| match defect.char_indices().nth(MAX_DEFECT_CHARS) {
                    Some((end, _)) => format!("{}...", &defect[..end]),
                    None => defect.clone(),
                });
        Verification {
            outcome: if defects.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Failed
            },
            at,
            data,
            defects: defects.len() as u64,
            first_defect,
            by: by.to_string(),
        }
    }

    /// The backup's last verification; an annotation that does not parse is an error naming it.
    pub fn of(backup: &Backup) -> Option<Result<Verification, String>> {
        let text = backup.metadata.annotations.as_ref()?.get(ANNOTATION)?;
        Some(
            serde_json::from_str(text)
                .map_err(|e| format!("annotation {ANNOTATION} does not parse: {e}")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_the_count_and_the_first_defect_cut_short() {
        let long = "x".repeat(400);
        let record = Verification::new(
            "2026-12-06T19:00:00Z".into(),
            false,
            &[long, "b".into()],
            "ark-server",
        );
        assert_eq!(record.outcome, Outcome::Failed);
        assert_eq!(record.defects, 2);
        assert_eq!(record.first_defect.as_deref().map(str::len), Some(303));
        let passed = Verification::new(
            "2026-12-06T19:00:00Z".into(),
            true,
            &[],
            "ark backup verify",
        );
        assert_eq!(
            serde_json::to_string(&passed).unwrap(),
            r#"{"outcome":"Passed","at":"2026-12-06T19:00:00Z","data":true,"defects":0,"by":"ark backup verify"}"#
        );
        let mut backup = Backup::new("b", Default::default());
        assert_eq!(Verification::of(&backup), None);
        backup.metadata.annotations = Some([(ANNOTATION.to_string(), "{".to_string())].into());
        assert!(
            Verification::of(&backup)
                .unwrap()
                .unwrap_err()
                .contains(ANNOTATION)
        );
    }
}
