//! The log of one backup or restore, written gzip-compressed to a scratch file as the work goes (so
//! it costs no memory) and uploaded beside the backup, in logrus' text format as Velero's logs are.

use std::fs::File;
use std::io::Write;

pub struct OperationLog {
    /// `backup=velero/nightly`, appended to every line.
    subject: String,
    writer: Option<crate::records::archive::Gz>,
    file: File,
}

#[derive(Clone, Copy)]
pub enum Level {
    Info,
    Warning,
    Error,
}

impl OperationLog {
    pub fn create(scratch: &std::path::Path, subject: String) -> std::io::Result<Self> {
        let (file, writer) = crate::records::archive::gz_file(scratch)?;
        Ok(Self {
            subject,
            writer: Some(writer),
            file,
        })
    }

    pub fn log(&mut self, level: Level, message: &str) {
        let level = match level {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        };
        let time = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
        let line = format!(
            "time=\"{time}\" level={level} msg={message:?} {}\n",
            self.subject
        );
        match level {
            "error" => tracing::error!("{} {message}", self.subject),
            "warning" => tracing::warn!("{} {message}", self.subject),
            _ => tracing::info!("{} {message}", self.subject),
        }
        if let Some(writer) = &mut self.writer {
            // A log line that cannot be written must not fail the operation it describes.
            let _ = writer.write_all(line.as_bytes());
        }
    }

    pub fn info(&mut self, message: &str) {
        self.log(Level::Info, message);
    }

    /// Finishes the gzip stream; the file is gone when the returned handle drops.
    pub fn finish(mut self) -> std::io::Result<File> {
        if let Some(writer) = self.writer.take() {
            writer.finish()?.flush()?;
        }
        Ok(self.file)
    }
}
