//! Retention: deleting a partition's oldest sealed segments by size and by age, or below an
//! offset its writer no longer needs. The active segment is never deleted.
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

use std::sync::Arc;
use std::time::SystemTime;

use crate::error::Result;
use crate::partition::Partition;
use crate::segment::Segment;

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
    remove(&removed, "retention deleted a segment")?;
    match failure {
        Some(error) => Err(error),
        None => Ok(removed.len()),
    }
}

/// Deletes the sealed segments whose records are all below `offset` (a writer's request,
/// Kafka's `DeleteRecords`); returns the partition's first offset afterwards.
pub(crate) fn delete_before(partition: &Partition, offset: u64) -> Result<u64> {
    let removed = partition.drop_oldest_segments(|sealed, _| {
        sealed
            .iter()
            .take_while(|segment| segment.acknowledged_end() <= offset)
            .count()
    });
    remove(
        &removed,
        "deleted a segment below the offset its writer no longer needs",
    )?;
    Ok(partition.start())
}

/// Removes the files of segments already taken out of their partition.
fn remove(removed: &[Arc<Segment>], reason: &'static str) -> Result<()> {
    for segment in removed {
        tracing::info!(
            file = %segment.log_path.display(),
            base_offset = segment.base_offset,
            end_offset = segment.acknowledged_end(),
            "{reason}"
        );
        segment.remove_files()?;
    }
    Ok(())
}
