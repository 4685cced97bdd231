//! `ClusterShards`: the [`Shards`] seam in a cluster of several nodes, at one request's
//! consistency level. Each partition's group is found by token; writes commit through the
//! group's leader (from any node), reads go to a replica (ONE) or the leader after a read
//! index (QUORUM and above), scans walk the groups in token order. Without a majority of a
//! group's replicas alive, the request answers Unavailable at once.
//!
//! A batch spanning groups commits group by group: each group's part is atomic, the whole is
//! not (as a Cassandra logged batch, whose parts apply on different replicas).

use super::codec::{decode, encode};
use super::raft_types::{Command, GroupInfo, NodeId, Reply};
use super::replica_read::read_here;
use super::routing::{group_for, partition_token, ranges_of};
use super::rpc::{ProposeFailure, Request, Response};
use super::Cluster;
use crate::shard::{CasDecision, CasError, Rejected, ShardError, Shards};
use cql::request::Consistency;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::token::MIN_TOKEN;
use storage::{
    Cursor, IndexLookup, Mutation, NearestRow, PartitionSlice, ScanPage, Slice, StorageError,
    TableId, TableLayout, TokenRange, VectorIndexSpec,
};

/// The pause before routing again a request that met a split (the map catches up in
/// milliseconds).
const MOVED_RETRY: Duration = Duration::from_millis(20);

/// The coordinator's clock in seconds: the expiry base a write's entry carries.
fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The cluster's shards at one consistency level.
pub struct ClusterShards {
    cluster: Arc<Cluster>,
    level: Consistency,
}

impl ClusterShards {
    /// The shards of `cluster` for a request at `level`.
    pub fn new(cluster: Arc<Cluster>, level: Consistency) -> ClusterShards {
        ClusterShards { cluster, level }
    }

    fn linearizable(&self) -> bool {
        !matches!(
            self.level,
            Consistency::One | Consistency::LocalOne | Consistency::Any
        )
    }

    fn timeout(&self, write: bool) -> Duration {
        let c = self.cluster.node().config();
        Duration::from_millis(if write {
            c.write_request_timeout_ms
        } else {
            c.read_request_timeout_ms
        })
        .mul_f32(0.9)
    }

    /// Runs `future` to completion from the blocking thread the executor runs on.
    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        let runtime = self.cluster.runtime().clone();
        tokio::task::block_in_place(|| runtime.block_on(future))
    }

    fn group(&self, table: TableId, partition_key: &[Vec<u8>]) -> Result<GroupInfo, ShardError> {
        let token = partition_token(partition_key);
        self.cluster
            .meta_state()
            .with(|s| group_for(s, table, token))
            .ok_or(ShardError::Storage(StorageError::UnknownTable(table)))
    }

    /// Replicas of `group` that are up (this node always is).
    fn alive(&self, group: &GroupInfo) -> i32 {
        let me = self.cluster.me().id;
        group
            .replicas
            .iter()
            .filter(|r| **r == me || self.cluster.liveness().is_up(**r))
            .count() as i32
    }

    /// Counts a request for `group` that reached a node holding none of its replicas (the
    /// driver did not route it by token).
    fn count_non_replica(&self, group: &GroupInfo) {
        if !group.replicas.contains(&self.cluster.me().id) {
            self.cluster.node().metrics().non_replica();
        }
    }

    /// Unavailable when fewer than a majority of the group's replicas are alive (the level a
    /// request needs is always met by a majority: Raft commits and reads through one).
    fn check_alive(&self, group: &GroupInfo, needs_majority: bool) -> Result<(), ShardError> {
        let required = if needs_majority {
            group.replicas.len() as i32 / 2 + 1
        } else {
            1
        };
        let alive = self.alive(group);
        if alive < required {
            return Err(ShardError::Unavailable {
                consistency: self.level,
                required,
                alive,
            });
        }
        Ok(())
    }

    /// Commits `command` to `group` with what is left of `deadline`.
    fn propose_until(
        &self,
        group: &GroupInfo,
        command: Command,
        deadline: Instant,
    ) -> Result<Reply, super::propose::ProposeError> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.block_on(
            self.cluster
                .propose(group.id, &group.replicas, command, left),
        )
    }

    /// Commits `writes` to `group`; `Ok(false)` when the group split and no longer owns one
    /// of their tokens (nothing was written: route them again).
    fn write_group(
        &self,
        group: &GroupInfo,
        writes: Vec<(TableId, Mutation)>,
        deadline: Instant,
    ) -> Result<bool, ShardError> {
        self.check_alive(group, true)?;
        self.count_non_replica(group);
        crate::query_trace::event(|| {
            format!(
                "Committing {} writes to group {} (replicas {:?})",
                writes.len(),
                group.id,
                group.replicas
            )
        });
        let now = now_seconds();
        let command = Command::Write { now, writes };
        match self.propose_until(group, command, deadline) {
            Ok(Reply::Done) => Ok(true),
            Ok(Reply::Moved) => Ok(false),
            Ok(Reply::Rejected(r)) => Err(ShardError::Rejected(r)),
            Ok(Reply::Refused(m)) => Err(ShardError::Rejected(Rejected::Invalid(m))),
            Err(super::propose::ProposeError::Throttled(_, retry_after_ms)) => {
                Err(ShardError::Throttled { retry_after_ms })
            }
            Ok(Reply::CasConflict) | Err(_) => Err(self.write_timeout(group)),
        }
    }

    fn write_timeout(&self, group: &GroupInfo) -> ShardError {
        ShardError::WriteTimeout {
            consistency: self.level,
            block_for: group.replicas.len() as i32 / 2 + 1,
        }
    }

    fn read_timeout(&self, group: &GroupInfo) -> ShardError {
        ShardError::ReadTimeout {
            consistency: self.level,
            block_for: if self.linearizable() {
                group.replicas.len() as i32 / 2 + 1
            } else {
                1
            },
        }
    }

    /// Runs a read on a replica of `group`: this node's when it holds one, else (or when a
    /// linearizable read needs the leader) the one that answers. `None` when the group split
    /// and no longer owns `last_token` (route the read again).
    #[allow(clippy::too_many_arguments)]
    fn read_group<T: crate::throughput::request_units::ReadCost>(
        &self,
        group: &GroupInfo,
        table: TableId,
        last_token: i64,
        deadline: Instant,
        local: impl Fn(&storage::Storage) -> Result<T, StorageError>,
        remote: impl Fn(bool) -> Request,
        unwrap: impl Fn(Response) -> Option<Result<T, ProposeFailure>>,
    ) -> Result<Option<T>, ShardError> {
        let linearizable = self.linearizable();
        self.check_alive(group, linearizable)?;
        let me = self.cluster.me().id;
        let mut target: Option<NodeId> = group.replicas.contains(&me).then_some(me);
        let mut next = 0usize;
        self.block_on(async {
            loop {
                let to = target.unwrap_or_else(|| {
                    next += 1;
                    group.replicas[(next - 1) % group.replicas.len()]
                });
                let attempt = if to == me {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let here = read_here(
                        &self.cluster,
                        group.id,
                        table,
                        last_token,
                        linearizable,
                        &local,
                    );
                    tokio::time::timeout(left, here)
                        .await
                        .unwrap_or_else(|_| Err(ProposeFailure::Failed("timed out".into())))
                } else {
                    self.remote_read(to, remote(linearizable), deadline, &unwrap)
                        .await
                };
                match attempt {
                    Ok(v) => return Ok(Some(v)),
                    Err(ProposeFailure::Moved) => return Ok(None),
                    Err(ProposeFailure::Throttled(retry_after_ms)) => {
                        return Err(ShardError::Throttled { retry_after_ms })
                    }
                    Err(ProposeFailure::Rejected(r)) => {
                        return Err(ShardError::Storage(r.into_storage()))
                    }
                    Err(ProposeFailure::NotLeader(Some(l))) if target != Some(l) => {
                        target = Some(l);
                        continue;
                    }
                    Err(_) => target = None,
                }
                if Instant::now() >= deadline {
                    return Err(self.read_timeout(group));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    }

    async fn remote_read<T>(
        &self,
        to: NodeId,
        request: Request,
        deadline: Instant,
        unwrap: &impl Fn(Response) -> Option<Result<T, ProposeFailure>>,
    ) -> Result<T, ProposeFailure> {
        let addr = self
            .cluster
            .address_of(to)
            .ok_or(ProposeFailure::NotLeader(None))?;
        crate::query_trace::event(|| format!("Sending the read to the replica at {addr}"));
        let payload = encode(&request).map_err(|e| ProposeFailure::Failed(e.to_string()))?;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10));
        let bytes = self
            .cluster
            .transport()
            .call(addr, payload, left)
            .await
            .map_err(|e| ProposeFailure::Failed(e.to_string()))?;
        let response: Response =
            decode(&bytes).map_err(|e| ProposeFailure::Failed(e.to_string()))?;
        match response {
            Response::NoGroup => Err(ProposeFailure::NoGroup),
            other => unwrap(other)
                .unwrap_or_else(|| Err(ProposeFailure::Failed("unexpected answer".into()))),
        }
    }

    /// A scan (or, with `lookup`, an index scan) group by group over `range`.
    fn scan_groups(
        &self,
        table: TableId,
        lookup: Option<&IndexLookup>,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        let from = cursor.and_then(Cursor::scan_token);
        let deadline = Instant::now() + self.timeout(false);
        let mut page = ScanPage::default();
        let mut cursor = cursor.cloned();
        self.walk_groups(table, range, from, deadline, |group, sub| {
            let left =
                limit.saturating_sub(page.partitions.iter().map(|p| p.rows.len().max(1)).sum());
            if left == 0 {
                return Ok(Visit::Stop);
            }
            let here = cursor.take();
            let part = self.read_group(
                group,
                table,
                sub.end,
                deadline,
                |s| match lookup {
                    Some(l) => s.index_scan(table, l, sub, left, here.as_ref()),
                    None => s.scan(table, sub, left, here.as_ref()),
                },
                |linearizable| Request::Scan {
                    group: group.id,
                    table,
                    range: sub,
                    limit: left,
                    cursor: here.clone(),
                    index: lookup.cloned(),
                    linearizable,
                },
                |r| match r {
                    Response::Scan(r) => Some(r),
                    _ => None,
                },
            )?;
            let Some(part) = part else {
                // Read again from the same place once the map has caught up.
                cursor = here;
                return Ok(Visit::Moved);
            };
            page.items_read += part.items_read;
            page.partitions.extend(part.partitions);
            if part.cursor.is_some() {
                page.cursor = part.cursor;
                return Ok(Visit::Stop);
            }
            Ok(Visit::Next)
        })?;
        Ok(page)
    }

    /// Walks the groups holding `range` of `table` in token order, skipping those wholly
    /// before the token `from` (a scan cursor's partition). `visit` reads one group's part of
    /// the range; a group that moved or split meanwhile ([`Visit::Moved`]) makes the walk read
    /// the map again and go on from that part, after a pause, until `deadline`.
    ///
    /// # Errors
    /// UnknownTable for a table without groups, a read timeout past `deadline`, and what
    /// `visit` returns.
    fn walk_groups(
        &self,
        table: TableId,
        range: TokenRange,
        from: Option<i64>,
        deadline: Instant,
        mut visit: impl FnMut(&GroupInfo, TokenRange) -> Result<Visit, ShardError>,
    ) -> Result<(), ShardError> {
        let end = if range.end == MIN_TOKEN {
            i64::MAX
        } else {
            range.end
        };
        // Tokens up to `done` are read; a split or move met on the way re-reads the map.
        let mut done = range.start;
        'route: loop {
            let groups = self.cluster.meta_state().with(|s| ranges_of(s, table));
            if groups.is_empty() {
                return Err(ShardError::Storage(StorageError::UnknownTable(table)));
            }
            for (group_start, group) in groups {
                if from.is_some_and(|t| t > group.end) || group.end <= done {
                    continue;
                }
                let (start, stop) = (done.max(group_start), end.min(group.end));
                if start >= stop {
                    break;
                }
                match visit(&group, TokenRange { start, end: stop })? {
                    Visit::Next => done = stop,
                    Visit::Stop => return Ok(()),
                    Visit::Moved => {
                        if Instant::now() >= deadline {
                            return Err(self.read_timeout(&group));
                        }
                        std::thread::sleep(MOVED_RETRY);
                        continue 'route;
                    }
                }
            }
            return Ok(());
        }
    }
}

/// What [`ClusterShards::walk_groups`] does after one group's part of a range.
enum Visit {
    /// Go on with the next group.
    Next,
    /// The walk is done.
    Stop,
    /// The group no longer holds the part: read the map again.
    Moved,
}

impl Shards for ClusterShards {
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError> {
        let deadline = Instant::now() + self.timeout(true);
        let mut pending: Vec<(TableId, Mutation)> =
            writes.iter().map(|(t, m)| (*t, (*m).clone())).collect();
        while !pending.is_empty() {
            let mut by_group: Vec<(GroupInfo, Vec<(TableId, Mutation)>)> = Vec::new();
            for (table, m) in pending.drain(..) {
                let group = self.group(table, &m.partition_key)?;
                match by_group.iter_mut().find(|(g, _)| g.id == group.id) {
                    Some((_, list)) => list.push((table, m)),
                    None => by_group.push((group, vec![(table, m)])),
                }
            }
            for (group, writes) in by_group {
                if !self.write_group(&group, writes.clone(), deadline)? {
                    if Instant::now() >= deadline {
                        return Err(self.write_timeout(&group));
                    }
                    pending.extend(writes);
                }
            }
            if !pending.is_empty() {
                // A group split under these writes: route them again on the new map.
                std::thread::sleep(MOVED_RETRY);
            }
        }
        Ok(())
    }

    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError> {
        let deadline = Instant::now() + self.timeout(false);
        let token = partition_token(partition_key);
        let mut counted = false;
        loop {
            let group = self.group(table, partition_key)?;
            if !counted {
                self.count_non_replica(&group);
                counted = true;
            }
            let read = self.read_group(
                &group,
                table,
                token,
                deadline,
                |s| s.read_partition(table, partition_key, slice),
                |linearizable| Request::Read {
                    group: group.id,
                    table,
                    partition_key: partition_key.to_vec(),
                    slice: slice.clone(),
                    linearizable,
                },
                |r| match r {
                    Response::Read(r) => Some(r),
                    _ => None,
                },
            )?;
            match read {
                Some(r) => return Ok(r),
                None if Instant::now() >= deadline => return Err(self.read_timeout(&group)),
                None => std::thread::sleep(MOVED_RETRY),
            }
        }
    }

    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        self.scan_groups(table, None, range, limit, cursor)
    }

    fn index_scan(
        &self,
        table: TableId,
        lookup: &IndexLookup,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        self.scan_groups(table, Some(lookup), range, limit, cursor)
    }

    fn nearest(
        &self,
        table: TableId,
        range: TokenRange,
        index: &VectorIndexSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<NearestRow>, ShardError> {
        let deadline = Instant::now() + self.timeout(false);
        let mut found: Vec<NearestRow> = Vec::new();
        self.walk_groups(table, range, None, deadline, |group, sub| {
            // Each group's replica answers from its own graphs.
            let part = self.read_group(
                group,
                table,
                sub.end,
                deadline,
                |s| s.nearest(table, sub, index.column, query, k),
                |linearizable| Request::Nearest {
                    group: group.id,
                    table,
                    range: sub,
                    index: *index,
                    query: query.to_vec(),
                    k,
                    linearizable,
                },
                |r| match r {
                    Response::Nearest(r) => Some(r),
                    _ => None,
                },
            )?;
            let Some(part) = part else {
                return Ok(Visit::Moved);
            };
            found.extend(part);
            found.sort_by(|a, b| b.score.total_cmp(&a.score));
            found.truncate(k);
            Ok(Visit::Next)
        })?;
        Ok(found)
    }

    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError> {
        let mut group = self.group(table, partition_key).map_err(CasError::Apply)?;
        if group.replicas == [self.cluster.me().id] {
            // The only replica is this node's store: its own compare-and-set holds the
            // others off (and this node keeps the group's budget).
            let metered = super::leader_budgets::metered(&self.cluster, table);
            if metered {
                super::leader_budgets::admit_read(&self.cluster, group.id, table).map_err(|e| {
                    match e {
                        ProposeFailure::Throttled(retry_after_ms) => {
                            CasError::Apply(ShardError::Throttled { retry_after_ms })
                        }
                        _ => CasError::Apply(self.write_timeout(&group)),
                    }
                })?;
            }
            let written = std::cell::Cell::new(None::<u64>);
            let mut metered_decide = |shards: &dyn Shards| {
                let m = decide(shards)?;
                written.set(m.as_ref().map(|m| m.data_size() as u64));
                Ok(m)
            };
            let applied = self.cluster.node().shards().compare_and_set(
                table,
                partition_key,
                &mut metered_decide,
            )?;
            if let Some(bytes) = written.get().filter(|_| metered) {
                super::leader_budgets::pay_write(&self.cluster, group.id, table, bytes);
            }
            return Ok(applied);
        }
        let serial = ClusterShards::new(self.cluster.clone(), Consistency::Serial);
        let deadline = Instant::now() + self.timeout(true);
        loop {
            let recording = super::cas::Recording::new(&serial, table, partition_key);
            let Some(mutation) = decide(&recording).map_err(CasError::Decide)? else {
                return Ok(false);
            };
            serial.check_alive(&group, true).map_err(CasError::Apply)?;
            let now = now_seconds();
            let command = Command::Cas {
                now,
                table,
                partition_key: partition_key.to_vec(),
                reads: recording.into_reads(),
                mutation,
            };
            match self.propose_until(&group, command, deadline) {
                Ok(Reply::Done) => return Ok(true),
                Ok(Reply::CasConflict) if Instant::now() < deadline => continue,
                Ok(Reply::Moved) if Instant::now() < deadline => {
                    std::thread::sleep(MOVED_RETRY);
                    group = self.group(table, partition_key).map_err(CasError::Apply)?;
                    continue;
                }
                Ok(Reply::Rejected(r)) => return Err(CasError::Apply(ShardError::Rejected(r))),
                Ok(Reply::Refused(m)) => {
                    return Err(CasError::Apply(ShardError::Rejected(Rejected::Invalid(m))))
                }
                Err(super::propose::ProposeError::Throttled(_, retry_after_ms)) => {
                    return Err(CasError::Apply(ShardError::Throttled { retry_after_ms }))
                }
                Ok(Reply::CasConflict | Reply::Moved) | Err(_) => {
                    return Err(CasError::Apply(ShardError::WriteTimeout {
                        consistency: Consistency::Serial,
                        block_for: group.replicas.len() as i32 / 2 + 1,
                    }))
                }
            }
        }
    }

    fn write_stalled(&self, table: TableId) -> bool {
        self.cluster.node().storage().write_stalled(table)
    }

    fn deferring_sync(&self, work: &mut dyn FnMut()) -> bool {
        work();
        false
    }

    fn sync(&self) -> Result<(), ShardError> {
        Ok(())
    }

    fn create_table(&self, table: TableId, layout: TableLayout) -> Result<(), ShardError> {
        Ok(self.cluster.node().storage().create_table(table, layout)?)
    }

    fn drop_table(&self, table: TableId) -> Result<(), ShardError> {
        Ok(self.cluster.node().storage().drop_table(table)?)
    }

    /// Truncates group by group, each through its log (so every replica removes the same
    /// rows at the same point of its log); a group that split meanwhile starts it over on the
    /// new map (truncating a range twice is harmless).
    fn truncate(&self, table: TableId) -> Result<(), ShardError> {
        let ms = self.cluster.node().config().request_timeout_ms;
        let deadline = Instant::now() + Duration::from_millis(ms).mul_f32(0.9);
        'route: loop {
            let groups = self.cluster.meta_state().with(|s| ranges_of(s, table));
            if groups.is_empty() {
                return Err(ShardError::Storage(StorageError::UnknownTable(table)));
            }
            for (start, group) in groups {
                self.check_alive(&group, true)?;
                let command = Command::Truncate {
                    table,
                    start,
                    end: group.end,
                };
                match self.propose_until(&group, command, deadline) {
                    Ok(Reply::Done) => {}
                    Ok(Reply::Moved) if Instant::now() < deadline => {
                        std::thread::sleep(MOVED_RETRY);
                        continue 'route;
                    }
                    Ok(Reply::Rejected(r)) => return Err(ShardError::Rejected(r)),
                    Ok(Reply::Refused(m)) => {
                        return Err(ShardError::Rejected(Rejected::Invalid(m)))
                    }
                    Ok(Reply::Moved | Reply::CasConflict) | Err(_) => {
                        return Err(self.write_timeout(&group))
                    }
                }
            }
            return Ok(());
        }
    }
}
