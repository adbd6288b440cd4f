//! Kubernetes Events about ark's objects: what a user must see on the object itself
//! (`kubectl describe`) but that has no place in its status.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

pub struct Events {
    recorder: Recorder,
}

impl Events {
    pub fn new(client: kube::Client, identity: &str) -> Self {
        let reporter = Reporter {
            controller: "ark-server".into(),
            instance: Some(identity.to_string()),
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// A Warning event on `object`, about `related` when it concerns another object (events
    /// with the same reason on one object are told apart by it). Best effort: an event that cannot
    /// be written is logged, and never stops the work it reports on.
    pub async fn warn(
        &self,
        object: ObjectReference,
        related: Option<ObjectReference>,
        reason: &str,
        action: &str,
        note: String,
    ) {
        tracing::warn!("{reason}: {note}");
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(truncated(note)),
            action: action.into(),
            secondary: related,
        };
        self.publish(event, object).await;
    }

    /// A Normal event on `object`: something the server did (or chose not to do) that its owner
    /// would otherwise not see. Best effort, as a warning.
    pub async fn normal(&self, object: ObjectReference, reason: &str, action: &str, note: String) {
        tracing::info!("{reason}: {note}");
        let event = Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(truncated(note)),
            action: action.into(),
            secondary: None,
        };
        self.publish(event, object).await;
    }

    async fn publish(&self, event: Event, object: ObjectReference) {
        if let Err(error) = self.recorder.publish(&event, &object).await {
            tracing::warn!("writing a {} event: {error}", event.reason);
        }
    }
}

/// The API server refuses an event note longer than 1 KiB.
fn truncated(mut note: String) -> String {
    const MAX: usize = 1024;
    if note.len() > MAX {
        let mut end = MAX - 3;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_notes_are_cut_at_a_character_boundary() {
        assert_eq!(super::truncated("short".into()), "short");
        let cut = super::truncated("é".repeat(600));
        assert_eq!(cut.len(), 1023);
        assert!(cut.ends_with("..."));
    }
}
