//! SQLite on a disk that fills up: `503 storage_full` for writes, reads unaffected, `/readyz`
//! not ready, nothing lost, and recovery once space is freed. The disk is a small tmpfs the test
//! mounts, which needs root; elsewhere the test is skipped loudly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use actix_web::test::TestRequest;
use petstore_store::testing::{in_ci, loud_skip};
use petstore_store::{Store, StoreConfig};

use crate::helpers::TestApp;

/// A tmpfs of a few MiB, unmounted (and its folder removed) on drop.
struct SmallDisk {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<Self> {
        let parent = tempfile::tempdir().ok()?;
        let dir = parent.path().join("disk");
        std::fs::create_dir(&dir).ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(Self {
            dir,
            _parent: parent,
        })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// Writes zeros into `path` until the filesystem refuses.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).expect("filler");
    let chunk = vec![0u8; 16 * 1024];
    while file
        .write_all(&chunk)
        .and_then(|()| file.sync_all())
        .is_ok()
    {}
}

#[actix_web::test]
async fn a_full_disk_answers_503_storage_full_and_recovers_once_space_is_freed() {
    let Some(disk) = SmallDisk::mount("8m") else {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
        assert!(!(root && in_ci()), "CI runs as root: the tmpfs must mount");
        loud_skip("the disk-full test mounts a tmpfs, which needs root");
        return;
    };
    let store = Store::open(&StoreConfig::new(
        disk.dir.join("petstore.db").display().to_string(),
    ))
    .expect("open");
    store.migrate().await.expect("migrate");
    let app = TestApp::with_store(None, store).await;
    for i in 0..5 {
        app.create_pet(&format!("before {i}"), "available").await;
    }

    let filler = disk.dir.join("filler");
    fill(&filler);
    let mut refused = None;
    let mut created_while_filling = 0;
    for i in 0..500 {
        let reply = app
            .post_json(
                "/v1/pets",
                &format!(r#"{{"name":"during {i}","categoryId":1}}"#),
            )
            .await;
        if reply.status == 201 {
            created_while_filling += 1; // the last pages of the WAL
            continue;
        }
        refused = Some(reply);
        break;
    }
    let refused = refused.expect("writes fail once the disk is full");
    refused.assert_error(503, "storage_full");
    assert_eq!(refused.header("retry-after"), Some("60"));
    app.post_json("/v1/pets", r#"{"name":"again","categoryId":1}"#)
        .await
        .assert_error(503, "storage_full");
    app.send(TestRequest::get().uri("/readyz"))
        .await
        .assert_error(503, "service_unavailable");
    let listed = app.get("/v1/pets?limit=100").await;
    assert_eq!(listed.status, 200, "reads still work");
    assert_eq!(
        listed.json().as_array().expect("array").len(),
        5 + created_while_filling,
        "every pet answered 201 is there, no other"
    );

    std::fs::remove_file(&filler).expect("free the space");
    // Ready again once the last check is older than its second.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while app.send(TestRequest::get().uri("/readyz")).await.status != 200 {
        assert!(std::time::Instant::now() < deadline, "/readyz stayed 503");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    app.create_pet("after", "available").await;
    let names = app.pet_names().await;
    assert_eq!(names.len(), 5 + created_while_filling + 1);
    assert_eq!(
        names[..5],
        ["before 0", "before 1", "before 2", "before 3", "before 4"]
    );
    assert_eq!(names.last().map(String::as_str), Some("after"));
}
