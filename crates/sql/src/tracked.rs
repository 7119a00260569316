//! [`Tracked`]: a query's state by key (a join side's rows, an aggregate's groups), a
//! [`TrackedMap`] keyed by rows of values, so a checkpoint writes only the keys changed.

use runnel_streamlet::checkpoint::TrackedMap;

pub(crate) use runnel_streamlet::checkpoint::Kept;

use crate::grouping::GroupKey;

/// State by key (a row of values), and the keys changed since the changes were last taken.
pub(crate) type Tracked<V> = TrackedMap<GroupKey, V>;
