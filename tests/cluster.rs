//! A three-node cluster on 127.0.0.1, .2 and .3, each node its own ringdb process: the nodes
//! find each other from one seed, drivers discover all of them from one contact point, DDL
//! made at one node is seen at every node, and a node killed and restarted catches up.

mod common;

use common::cluster::TestCluster;
use common::paged_rows;
use scylla::statement::Consistency;
use std::time::{Duration, Instant};

async fn table_names(session: &scylla::client::session::Session, ks: &str) -> Vec<String> {
    let mut names: Vec<(String,)> = paged_rows(
        session,
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
        (ks,),
        100,
    )
    .await;
    names.sort();
    names.into_iter().map(|(n,)| n).collect()
}

/// Waits until `check` passes, at most 10 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_form_a_cluster_and_share_the_schema() {
    let mut cluster = TestCluster::start(3);
    cluster.wait_until_formed().await;

    // One contact point: the driver learns the other two from system.peers.
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(cluster.nodes[0].native.to_string())
        .build()
        .await
        .expect("driver connects");
    let hosts: Vec<_> = session
        .get_cluster_state()
        .get_nodes_info()
        .iter()
        .map(|n| n.address.ip())
        .collect();
    assert_eq!(hosts.len(), 3, "the driver discovers every node: {hosts:?}");

    // `ringdb status` lists every node, up (once pinged), with its addresses.
    let status = || {
        let out = std::process::Command::new(common::binary())
            .args(["status", "--server", &cluster.nodes[0].native.to_string()])
            .output()
            .expect("ringdb status");
        assert!(out.status.success(), "ringdb status failed");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let all_up = |listing: &str| {
        cluster.nodes.iter().all(|node| {
            listing
                .lines()
                .any(|l| l.starts_with("UP") && l.contains(&node.native.to_string()))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut listing = status();
    while !all_up(&listing) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        listing = status();
    }
    assert!(all_up(&listing), "every node listed up:\n{listing}");
    assert!(listing.contains("3 nodes"), "{listing}");

    // DDL at node 2 is seen at every node, and the schema versions agree.
    let at_two = cluster.nodes[1].session().await;
    at_two
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            (),
        )
        .await
        .expect("create keyspace at node 2");
    at_two
        .query_unpaged("CREATE TABLE ks.t (k int PRIMARY KEY, v text)", ())
        .await
        .expect("create table at node 2");
    for node in &cluster.nodes {
        let s = node.session().await;
        assert_eq!(
            table_names(&s, "ks").await,
            vec!["t".to_string()],
            "node {}",
            node.index
        );
    }
    assert!(
        session.await_schema_agreement().await.is_ok(),
        "every node reports the same schema version"
    );
    let versions = |s: scylla::client::session::Session| async move {
        let (v,): (uuid::Uuid,) =
            paged_rows(&s, "SELECT schema_version FROM system.local", (), 100)
                .await
                .into_iter()
                .next()
                .expect("local row");
        v
    };
    let mut seen = Vec::new();
    for node in &cluster.nodes {
        seen.push(versions(node.session().await).await);
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "schema versions {seen:?}"
    );

    // RF 3 data written at one node is read at every node, at ONE and at QUORUM.
    let insert = at_two
        .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    for k in 0..200i32 {
        at_two
            .execute_unpaged(&insert, (k, format!("v{k}")))
            .await
            .expect("RF 3 write");
    }
    for node in &cluster.nodes {
        let s = node.session().await;
        for cl in [Consistency::One, Consistency::Quorum] {
            let mut read = scylla::statement::Statement::new("SELECT k, v FROM ks.t WHERE k = ?");
            read.set_consistency(cl);
            for k in [0i32, 77, 199] {
                let row: Vec<(i32, String)> = s
                    .query_unpaged(read.clone(), (k,))
                    .await
                    .expect("read")
                    .into_rows_result()
                    .expect("rows")
                    .rows::<(i32, String)>()
                    .expect("typed")
                    .map(|r| r.expect("row"))
                    .collect();
                assert_eq!(
                    row,
                    vec![(k, format!("v{k}"))],
                    "node {} at {cl:?}",
                    node.index
                );
            }
        }
        let all: Vec<(i32,)> = paged_rows(&s, "SELECT k FROM ks.t", (), 37).await;
        assert_eq!(
            all.len(),
            200,
            "a full scan at node {} sees every row",
            node.index
        );
    }

    // Lightweight transactions from several nodes on one partition: exactly one INSERT IF NOT
    // EXISTS applies, and a conditional UPDATE sees the winner's value.
    let mut applied = 0;
    for node in &cluster.nodes {
        let s = node.session().await;
        let result = s
            .query_unpaged(
                format!(
                    "INSERT INTO ks.t (k, v) VALUES (5000, 'from {}') IF NOT EXISTS",
                    node.index
                ),
                (),
            )
            .await
            .expect("LWT insert")
            .into_rows_result()
            .expect("LWT result");
        let (was_applied,) = result
            .rows::<(bool,)>()
            .map(|mut r| r.next().expect("row").expect("applied column"))
            .unwrap_or_else(|_| {
                result
                    .rows::<(bool, Option<i32>, Option<String>)>()
                    .expect("typed")
                    .next()
                    .map(|r| (r.expect("row").0,))
                    .expect("one row")
            });
        applied += i32::from(was_applied);
    }
    assert_eq!(applied, 1, "one of three INSERT IF NOT EXISTS applies");
    let three = cluster.nodes[2].session().await;
    let first = three
        .query_unpaged(
            "UPDATE ks.t SET v = 'swapped' WHERE k = 5000 IF v = 'from 1'",
            (),
        )
        .await
        .expect("LWT update")
        .into_rows_result()
        .expect("rows")
        .rows::<(bool,)>()
        .expect("typed")
        .next()
        .expect("row")
        .expect("applied");
    assert!(first.0, "the condition holds: node 1 inserted first");
    let again = three
        .query_unpaged(
            "UPDATE ks.t SET v = 'twice' WHERE k = 5000 IF v = 'from 1'",
            (),
        )
        .await
        .expect("LWT update")
        .into_rows_result()
        .expect("rows");
    assert_eq!(again.rows_num(), 1);
    let mut check = scylla::statement::Statement::new("SELECT v FROM ks.t WHERE k = 5000");
    check.set_consistency(Consistency::Quorum);
    let (v,): (String,) = cluster.nodes[0]
        .session()
        .await
        .query_unpaged(check, ())
        .await
        .expect("read")
        .into_rows_result()
        .expect("rows")
        .first_row::<(String,)>()
        .expect("row");
    assert_eq!(v, "swapped");
    at_two
        .query_unpaged("DELETE FROM ks.t WHERE k = 5000", ())
        .await
        .expect("delete");

    // A node that was down while the schema changed catches up when it restarts.
    cluster.node(3).kill();
    let down = cluster.nodes[2].native.to_string();
    eventually("node 1 sees node 3 down", || {
        let s = &session;
        let down = down.clone();
        async move {
            let rows: Vec<(String, String)> = paged_rows(
                s,
                "SELECT native_address, status FROM system_views.cluster_nodes",
                (),
                100,
            )
            .await;
            rows.iter().any(|(a, st)| *a == down && st == "DOWN")
        }
    })
    .await;
    at_two
        .query_unpaged("CREATE TABLE ks.later (k int PRIMARY KEY)", ())
        .await
        .expect("DDL with one node of three down");
    // Writes and QUORUM reads go on with one node of three down (its groups elect new
    // leaders); every acknowledged write is kept.
    let started = Instant::now();
    let mut acknowledged = Vec::new();
    for k in 1000..1100i32 {
        let mut write = scylla::statement::Statement::new("INSERT INTO ks.t (k, v) VALUES (?, ?)");
        write.set_consistency(Consistency::Quorum);
        if at_two
            .query_unpaged(write, (k, format!("v{k}")))
            .await
            .is_ok()
        {
            acknowledged.push(k);
        }
    }
    assert!(
        acknowledged.len() >= 90,
        "writes resume after a node is killed: {} of 100 acknowledged in {:?}",
        acknowledged.len(),
        started.elapsed()
    );
    // The killed node's groups have new leaders, and the tokens follow them: drivers now
    // route those partitions to the survivors (node 3 lists only its own fallback token).
    let one = cluster.nodes[0].session().await;
    let three_ip: std::net::IpAddr = "127.0.0.3".parse().expect("ip");
    eventually("the killed node's tokens move to the new leaders", || {
        let one = &one;
        async move {
            let local: Vec<(Vec<String>,)> =
                paged_rows(one, "SELECT tokens FROM system.local", (), 10).await;
            let peers: Vec<(std::net::IpAddr, Vec<String>)> =
                paged_rows(one, "SELECT peer, tokens FROM system.peers", (), 10).await;
            let live: usize = local.iter().map(|(t,)| t.len()).sum::<usize>()
                + peers
                    .iter()
                    .filter(|(ip, _)| *ip != three_ip)
                    .map(|(_, t)| t.len())
                    .sum::<usize>();
            let dead = peers
                .iter()
                .find(|(ip, _)| *ip == three_ip)
                .map(|(_, t)| t.len());
            // Six groups per table (the two tables share their ends).
            live == 6 && dead == Some(1)
        }
    })
    .await;
    cluster.node(3).start();
    let three = cluster.nodes[2].session().await;
    eventually("node 3 learns the table made while it was down", || {
        let three = &three;
        async move { table_names(three, "ks").await == vec!["later".to_string(), "t".to_string()] }
    })
    .await;
    // It catches up from the log: at ONE it answers from its own replica.
    eventually(
        "node 3 catches up with the writes made while it was down",
        || {
            let three = &three;
            let acknowledged = &acknowledged;
            async move {
                let mut read = scylla::statement::Statement::new("SELECT k FROM ks.t WHERE k = ?");
                read.set_consistency(Consistency::One);
                let mut all = true;
                for k in acknowledged.iter().step_by(10) {
                    let found = three
                        .query_unpaged(read.clone(), (*k,))
                        .await
                        .ok()
                        .and_then(|r| r.into_rows_result().ok())
                        .is_some_and(|r| r.rows_num() == 1);
                    all &= found;
                }
                all
            }
        },
    )
    .await;
    let everything: Vec<(i32,)> = paged_rows(&three, "SELECT k FROM ks.t", (), 100).await;
    assert_eq!(
        everything.len(),
        200 + acknowledged.len(),
        "no acknowledged write is lost"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_password_hashes_reach_every_node() {
    let cluster = TestCluster::start_with(
        2,
        "authenticator = \"PasswordAuthenticator\"\nauthorizer = \"CassandraAuthorizer\"",
    );
    let admin = cluster.nodes[0]
        .session_as(Some(("cassandra", "cassandra")))
        .await
        .expect("superuser logs in at node 1");
    cluster
        .wait_until_formed_as(("cassandra", "cassandra"))
        .await;
    admin
        .query_unpaged(
            "CREATE ROLE alice WITH PASSWORD = 'secret-pw' AND LOGIN = true",
            (),
        )
        .await
        .expect("create role at node 1");
    admin
        .query_unpaged("GRANT SELECT ON KEYSPACE system_auth TO alice", ())
        .await
        .expect("grant at node 1");
    // Made at node 1, alice logs in at node 2 and uses her grant there: the hash and the
    // permission came through the metadata group.
    let alice = cluster.nodes[1]
        .session_as(Some(("alice", "secret-pw")))
        .await
        .expect("alice logs in at node 2");
    let (role,): (String,) = alice
        .query_unpaged(
            "SELECT role FROM system_auth.roles WHERE role = 'alice'",
            (),
        )
        .await
        .expect("read roles")
        .into_rows_result()
        .expect("rows")
        .first_row::<(String,)>()
        .expect("alice's row");
    assert_eq!(role, "alice");
    assert!(
        cluster.nodes[1]
            .session_as(Some(("alice", "wrong")))
            .await
            .is_err(),
        "a wrong password is refused at node 2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_masks_reach_every_node() {
    let cluster = TestCluster::start_with(
        2,
        "authenticator = \"PasswordAuthenticator\"\nauthorizer = \"CassandraAuthorizer\"\n\
         dynamic_data_masking_enabled = true",
    );
    let admin_login = ("cassandra", "cassandra");
    cluster.wait_until_formed_as(admin_login).await;
    let admin = cluster.nodes[0]
        .session_as(Some(admin_login))
        .await
        .expect("superuser logs in at node 1");
    for ddl in [
        "CREATE KEYSPACE m WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
        "CREATE TABLE m.t (k int PRIMARY KEY, v text MASKED WITH mask_inner(1, 1))",
        "CREATE ROLE bob WITH PASSWORD = 'bob-pw' AND LOGIN = true",
        "GRANT SELECT ON TABLE m.t TO bob",
    ] {
        admin
            .query_unpaged(ddl, ())
            .await
            .unwrap_or_else(|e| panic!("{ddl} at node 1: {e}"));
    }
    let mut insert =
        scylla::statement::Statement::new("INSERT INTO m.t (k, v) VALUES (1, 'secret')");
    insert.set_consistency(Consistency::All);
    admin.query_unpaged(insert, ()).await.expect("insert");
    // Made at node 1, the mask holds for bob at node 2, and the superuser reads clear values
    // there.
    let read = |session: scylla::client::session::Session| async move {
        session
            .query_unpaged("SELECT v FROM m.t WHERE k = 1", ())
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .first_row::<(String,)>()
            .expect("the row")
            .0
    };
    let bob = cluster.nodes[1]
        .session_as(Some(("bob", "bob-pw")))
        .await
        .expect("bob logs in at node 2");
    assert_eq!(read(bob).await, "s****t");
    let admin_two = cluster.nodes[1]
        .session_as(Some(admin_login))
        .await
        .expect("superuser logs in at node 2");
    assert_eq!(read(admin_two).await, "secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_and_aggregates_reach_every_node() {
    let cluster = TestCluster::start_with(2, "user_defined_functions_enabled = true");
    cluster.wait_until_formed().await;
    let at_one = cluster.nodes[0].session().await;
    for ddl in [
        "CREATE KEYSPACE f WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
        "CREATE TABLE f.t (k int, c int, v int, PRIMARY KEY (k, c))",
        "CREATE FUNCTION f.plus(a int, b int) RETURNS NULL ON NULL INPUT RETURNS int \
         LANGUAGE lua AS 'return a + b'",
        "CREATE AGGREGATE f.total(int) SFUNC plus STYPE int INITCOND 0",
    ] {
        at_one
            .query_unpaged(ddl, ())
            .await
            .unwrap_or_else(|e| panic!("{ddl} at node 1: {e}"));
    }
    for c in 0..3 {
        let mut insert =
            scylla::statement::Statement::new("INSERT INTO f.t (k, c, v) VALUES (1, ?, ?)");
        insert.set_consistency(Consistency::All);
        at_one
            .query_unpaged(insert, (c, c * 10))
            .await
            .expect("insert");
    }
    // Made at node 1, the function and the aggregate are in node 2's schema and run there.
    let at_two = cluster.nodes[1].session().await;
    let names: Vec<(String,)> = paged_rows(
        &at_two,
        "SELECT function_name FROM system_schema.functions WHERE keyspace_name = 'f'",
        (),
        100,
    )
    .await;
    assert_eq!(names, vec![("plus".to_string(),)]);
    let (total,): (Option<i32>,) = at_two
        .query_unpaged("SELECT f.total(v) FROM f.t WHERE k = 1", ())
        .await
        .expect("aggregate at node 2")
        .into_rows_result()
        .expect("rows")
        .first_row::<(Option<i32>,)>()
        .expect("one row");
    assert_eq!(total, Some(30));
    let (plus,): (Option<i32>,) = at_two
        .query_unpaged("SELECT f.plus(v, 1) FROM f.t WHERE k = 1 AND c = 2", ())
        .await
        .expect("function at node 2")
        .into_rows_result()
        .expect("rows")
        .first_row::<(Option<i32>,)>()
        .expect("one row");
    assert_eq!(plus, Some(21));
}
