//! The node's own keyspaces and tables, defined in CQL exactly as Cassandra 4.1 declares them
//! (reference §2), parsed into catalog tables at startup.

/// (keyspace, is virtual, CREATE TABLE statements).
pub(super) const SYSTEM_TABLES: &[(&str, bool, &str)] = &[
    (
        "system",
        false,
        "CREATE TABLE system.local (key text PRIMARY KEY, bootstrapped text, broadcast_address inet,
            broadcast_port int, cluster_name text, cql_version text, data_center text,
            gossip_generation int, host_id uuid, listen_address inet, listen_port int,
            native_protocol_version text, partitioner text, rack text, release_version text,
            rpc_address inet, rpc_port int, schema_version uuid, tokens set<text>,
            truncated_at map<uuid, blob>);
         CREATE TABLE system.peers (peer inet PRIMARY KEY, data_center text, host_id uuid,
            preferred_ip inet, rack text, release_version text, rpc_address inet,
            schema_version uuid, tokens set<text>);
         CREATE TABLE system.peers_v2 (peer inet, peer_port int, data_center text, host_id uuid,
            native_address inet, native_port int, preferred_ip inet, preferred_port int, rack text,
            release_version text, schema_version uuid, tokens set<text>,
            PRIMARY KEY ((peer), peer_port));
         CREATE TABLE system.size_estimates (keyspace_name text, table_name text, range_start text,
            range_end text, mean_partition_size bigint, partitions_count bigint,
            PRIMARY KEY ((keyspace_name), table_name, range_start, range_end));
         CREATE TABLE system.table_estimates (keyspace_name text, table_name text, range_type text,
            range_start text, range_end text, mean_partition_size bigint, partitions_count bigint,
            PRIMARY KEY ((keyspace_name), table_name, range_type, range_start, range_end));",
    ),
    (
        "system_schema",
        false,
        "CREATE TABLE system_schema.keyspaces (keyspace_name text PRIMARY KEY,
            durable_writes boolean, replication frozen<map<text, text>>);
         CREATE TABLE system_schema.tables (keyspace_name text, table_name text,
            additional_write_policy text, bloom_filter_fp_chance double,
            caching frozen<map<text, text>>, cdc boolean, comment text,
            compaction frozen<map<text, text>>, compression frozen<map<text, text>>,
            crc_check_chance double, dclocal_read_repair_chance double,
            default_time_to_live int, extensions frozen<map<text, blob>>, flags frozen<set<text>>,
            gc_grace_seconds int, id uuid, max_index_interval int,
            memtable_flush_period_in_ms int, min_index_interval int, read_repair text,
            read_repair_chance double, speculative_retry text,
            PRIMARY KEY ((keyspace_name), table_name));
         CREATE TABLE system_schema.columns (keyspace_name text, table_name text,
            column_name text, clustering_order text, column_name_bytes blob, kind text,
            position int, type text, PRIMARY KEY ((keyspace_name), table_name, column_name));
         CREATE TABLE system_schema.dropped_columns (keyspace_name text, table_name text,
            column_name text, dropped_time timestamp, kind text, type text,
            PRIMARY KEY ((keyspace_name), table_name, column_name));
         CREATE TABLE system_schema.column_masks (keyspace_name text, table_name text,
            column_name text, function_keyspace text, function_name text,
            function_argument_types frozen<list<text>>,
            function_argument_values frozen<list<text>>,
            PRIMARY KEY ((keyspace_name), table_name, column_name));
         CREATE TABLE system_schema.triggers (keyspace_name text, table_name text,
            trigger_name text, options frozen<map<text, text>>,
            PRIMARY KEY ((keyspace_name), table_name, trigger_name));
         CREATE TABLE system_schema.views (keyspace_name text, view_name text,
            additional_write_policy text, base_table_id uuid, base_table_name text,
            bloom_filter_fp_chance double, caching frozen<map<text, text>>, cdc boolean,
            comment text, compaction frozen<map<text, text>>,
            compression frozen<map<text, text>>, crc_check_chance double,
            dclocal_read_repair_chance double, default_time_to_live int,
            extensions frozen<map<text, blob>>, gc_grace_seconds int, id uuid,
            include_all_columns boolean, max_index_interval int,
            memtable_flush_period_in_ms int, min_index_interval int, read_repair text,
            read_repair_chance double, speculative_retry text, where_clause text,
            PRIMARY KEY ((keyspace_name), view_name));
         CREATE TABLE system_schema.types (keyspace_name text, type_name text,
            field_names frozen<list<text>>, field_types frozen<list<text>>,
            PRIMARY KEY ((keyspace_name), type_name));
         CREATE TABLE system_schema.functions (keyspace_name text, function_name text,
            argument_types frozen<list<text>>, argument_names frozen<list<text>>, body text,
            called_on_null_input boolean, language text, return_type text,
            PRIMARY KEY ((keyspace_name), function_name, argument_types));
         CREATE TABLE system_schema.aggregates (keyspace_name text, aggregate_name text,
            argument_types frozen<list<text>>, final_func text, initcond text, return_type text,
            state_func text, state_type text,
            PRIMARY KEY ((keyspace_name), aggregate_name, argument_types));
         CREATE TABLE system_schema.indexes (keyspace_name text, table_name text,
            index_name text, kind text, options frozen<map<text, text>>,
            PRIMARY KEY ((keyspace_name), table_name, index_name));",
    ),
    (
        "system_auth",
        false,
        "CREATE TABLE system_auth.roles (role text PRIMARY KEY, can_login boolean,
            is_superuser boolean, member_of set<text>, salted_hash text);
         CREATE TABLE system_auth.role_members (role text, member text,
            PRIMARY KEY ((role), member));
         CREATE TABLE system_auth.role_permissions (role text, resource text,
            permissions set<text>, PRIMARY KEY ((role), resource));
         CREATE TABLE system_auth.resource_role_permissons_index (resource text, role text,
            PRIMARY KEY ((resource), role));
         CREATE TABLE system_auth.network_permissions (role text PRIMARY KEY,
            dcs frozen<set<text>>);",
    ),
    ("system_distributed", false, ""),
    (
        "system_traces",
        false,
        "CREATE TABLE system_traces.sessions (session_id uuid PRIMARY KEY, client inet,
            command text, coordinator inet, coordinator_port int, duration int,
            parameters map<text, text>, request text, started_at timestamp);
         CREATE TABLE system_traces.events (session_id uuid, event_id timeuuid, activity text,
            source inet, source_elapsed int, source_port int, thread text,
            PRIMARY KEY ((session_id), event_id));",
    ),
    (
        "system_virtual_schema",
        true,
        "CREATE TABLE system_virtual_schema.keyspaces (keyspace_name text PRIMARY KEY);
         CREATE TABLE system_virtual_schema.tables (keyspace_name text, table_name text,
            comment text, PRIMARY KEY ((keyspace_name), table_name));
         CREATE TABLE system_virtual_schema.columns (keyspace_name text, table_name text,
            column_name text, clustering_order text, column_name_bytes blob, kind text,
            position int, type text, PRIMARY KEY ((keyspace_name), table_name, column_name));",
    ),
    (
        "system_views",
        true,
        "CREATE TABLE system_views.physical_partitions (keyspace_name text, table_name text,
            id bigint, start_token bigint, end_token bigint, bytes bigint,
            partitions_estimate bigint, state text, replicas list<inet>, leader inet,
            ru_budget double, ru_last_second double, ru_last_minute double,
            PRIMARY KEY ((keyspace_name), table_name, id));
         CREATE TABLE system_views.cluster_nodes (host_id uuid PRIMARY KEY, native_address text,
            internode_address text, status text, state text, groups_led int, groups_held int,
            bytes bigint);
         CREATE TABLE system_views.moves (group_id bigint PRIMARY KEY, keyspace_name text,
            table_name text, from_node uuid, to_node uuid, bytes_received bigint,
            bytes_total bigint, elapsed_ms bigint);
         CREATE TABLE system_views.settings (name text PRIMARY KEY, value text);
         CREATE TABLE system_views.clients (address inet, port int,
            client_options frozen<map<text, text>>, connection_stage text, driver_name text,
            driver_version text, hostname text, protocol_version int, request_count bigint,
            ssl_cipher_suite text, ssl_enabled boolean, ssl_protocol text, username text,
            PRIMARY KEY ((address), port));
         CREATE TABLE system_views.caches (name text PRIMARY KEY, capacity_bytes bigint,
            entry_count int, hit_count bigint, hit_ratio double,
            recent_hit_rate_per_second bigint, recent_request_rate_per_second bigint,
            request_count bigint, size_bytes bigint);
         CREATE TABLE system_views.thread_pools (name text PRIMARY KEY, active_tasks int,
            active_tasks_limit int, blocked_tasks bigint, blocked_tasks_all_time bigint,
            completed_tasks bigint, pending_tasks int);
         CREATE TABLE system_views.sstable_tasks (keyspace_name text, table_name text,
            task_id uuid, completion_ratio double, kind text, progress bigint, total bigint,
            unit text, PRIMARY KEY ((keyspace_name), table_name, task_id));
         CREATE TABLE system_views.disk_usage (keyspace_name text, table_name text,
            mebibytes bigint, PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.max_partition_size (keyspace_name text, table_name text,
            mebibytes bigint, PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.local_read_latency (keyspace_name text, table_name text,
            count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double,
            PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.local_write_latency (keyspace_name text, table_name text,
            count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double,
            PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.local_scan_latency (keyspace_name text, table_name text,
            count bigint, max_ms double, p50th_ms double, p99th_ms double, per_second double,
            PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.coordinator_read_latency (keyspace_name text,
            table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double,
            per_second double, PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.coordinator_write_latency (keyspace_name text,
            table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double,
            per_second double, PRIMARY KEY ((keyspace_name, table_name)));
         CREATE TABLE system_views.coordinator_scan_latency (keyspace_name text,
            table_name text, count bigint, max_ms double, p50th_ms double, p99th_ms double,
            per_second double, PRIMARY KEY ((keyspace_name, table_name)));",
    ),
];
