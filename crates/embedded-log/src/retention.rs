//! Retention: deleting a partition's oldest sealed segments by size and by age. The active
//! segment is never deleted.
//!
//! - **Size** (`retention.bytes`): like Kafka, the oldest sealed segment goes while the
//!   partition would still hold at least `retention.bytes` without it, so a partition keeps
//!   between `retention.bytes` and that plus one segment.
//! - **Age** (`retention.ms`): a sealed segment goes when its file was last modified longer
//!   ago than `retention.ms`. The modification time is when its newest batch was appended.
//!   Record timestamps are not used: they are event time, set by producers, and may be zero
//!   or far in the past when history is replayed, which would delete fresh data. Copying the
//!   data directory without preserving modification times resets the clock.
//!
//! Readers that still hold a deleted segment keep reading its open file; a consumer whose
//! position falls below the new start moves up to it with a warning.

use std::time::SystemTime;

use crate::error::Result;
use crate::partition::Partition;

/// Deletes the segments retention no longer keeps; returns how many.
pub(crate) fn enforce(partition: &Partition, now: SystemTime) -> Result<usize> {
    let settings = partition.limits.settings;
    if settings.retention_bytes.is_none() && settings.retention.is_none() {
        return Ok(0);
    }
    let mut failure = None;
    let removed = partition.drop_oldest_segments(|sealed, active| {
        let mut count = 0;
        if let Some(limit) = settings.retention_bytes {
            let active_len = active.acknowledged_len();
            let mut total: u64 = active_len
                + sealed
                    .iter()
                    .map(|segment| segment.acknowledged_len())
                    .sum::<u64>();
            while let Some(oldest) = sealed.get(count) {
                let without = total - oldest.acknowledged_len();
                if without < limit {
                    break;
                }
                total = without;
                count += 1;
            }
        }
        if let Some(age) = settings.retention {
            while let Some(oldest) = sealed.get(count) {
                match oldest.modified() {
                    Ok(modified) if modified + age <= now => count += 1,
                    Ok(_) => break,
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
            }
        }
        count
    });
    for segment in &removed {
        tracing::info!(
            file = %segment.log_path.display(),
            base_offset = segment.base_offset,
            end_offset = segment.acknowledged_end(),
            "retention deleted a segment"
        );
        segment.remove_files()?;
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(removed.len()),
    }
}
