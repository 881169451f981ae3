// SPDX-License-Identifier: GPL-2.0
/* share_large_pages() and unshare_large_pages(): keyed segments. */
#include "lp.h"

/* Drop to uid/gid (-1: keep). Root stays root, with its capabilities. */
static void become(int uid, int gid)
{
	if (gid >= 0 && (setgroups(0, NULL) || setresgid(gid, gid, gid))) {
		printf("# setresgid(%d): %s\n", gid, strerror(errno));
		_exit(1);
	}
	if (uid >= 0 && setresuid(uid, uid, uid)) {
		printf("# setresuid(%d): %s\n", uid, strerror(errno));
		_exit(1);
	}
}

/*
 * A child that creates segment 'key' (len bytes, mode) as uid/gid (-1:
 * root), fills it with lp_fill(seed = key) and holds it until
 * holder_stop(). The test process itself never maps it, so whatever it
 * attaches, it attaches by key.
 */
static void holder_start(struct lp_peer *p, int key, unsigned long len,
			 int mode, int uid, int gid)
{
	long r;

	if (lp_peer_fork(p) == 0) {
		become(-1, gid);
		if (uid >= 0) {
			lp_set_memlock(len);
			become(uid, -1);
		}
		r = lpsys_share(key, 0, len, RW, IPC_CREAT | IPC_EXCL | mode);
		if (!LP_OK(r)) {
			lp_peer_send(p, -errno);
			_exit(1);
		}
		lp_fill(LP_PTR(r), len, key);
		lp_peer_send(p, 0);
		lp_peer_recv(p);
		_exit(lpsys_unshare(r) ? 2 : 0);
	}
	ASSERT_GT(p->pid, 0);
	r = lp_peer_recv(p);
	if (r)
		TH_LOG("holder could not create key %d: %s", key, strerror(-r));
	ASSERT_EQ(r, 0);
}

static void holder_stop(struct lp_peer *p)
{
	int status;

	lp_peer_send(p, 0);
	status = lp_peer_wait(p);
	ASSERT_TRUE(CHILD_EXITED(status, 0));
}

struct probe {
	int key, uid, gid, prot;
	unsigned long len;
	int err;	/* expected errno, 0: the attach must work */
};

/* In a child (run_child): attach as uid/gid and expect pr->err. */
static void attach_as(void *arg)
{
	struct probe *pr = arg;
	long r;

	become(pr->uid, pr->gid);
	if (pr->err) {
		ASSERT_ERRNO(lpsys_share(pr->key, 0, pr->len, pr->prot, 0), pr->err);
		_exit(0);
	}
	r = lpsys_share(pr->key, 0, pr->len, pr->prot, 0);
	ASSERT_TRUE(LP_OK(r));
	if (pr->prot & PROT_READ)
		ASSERT_TRUE(lp_check(LP_PTR(r), pr->len, pr->key));
	if (pr->prot & PROT_WRITE)
		*(volatile uint32_t *)(LP_PTR(r) + 8) = 0xfeed0000 | pr->uid;
	ASSERT_EQ(lpsys_unshare(r), 0);
	_exit(0);
}

static int probe(int key, unsigned long len, int uid, int gid, int prot,
		 int err)
{
	struct probe pr = { key, uid, gid, prot, len, err };

	return run_child(attach_as, &pr);
}

TEST(share_create_returns_aligned_zeroed_segment)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree();
	long r;

	r = lpsys_share(1000, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ((unsigned long)r % lp_size(), 0);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), len));
	lp_fill(LP_PTR(r), len, 1000);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1000));
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_attach_from_other_process_sees_data_both_ways)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree();
	struct lp_peer p;
	int status;
	long r;

	/* Fork first: the child attaches by key, not by inheritance. */
	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		r = lpsys_share(1001, 0, len, RW, 0);
		ASSERT_TRUE(LP_OK(r));
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x1001));
		lp_fill(LP_PTR(r), len, 0x2002);
		lp_peer_send(&p, lp_nfree());
		lp_peer_recv(&p);
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 0x3003));
		ASSERT_EQ(lpsys_unshare(r), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	r = lpsys_share(1001, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 0x1001);
	lp_peer_send(&p, 0);
	/* A second attacher takes no pages of its own. */
	EXPECT_EQ(lp_peer_recv(&p), nfree - 2);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x2002));
	lp_fill(LP_PTR(r), len, 0x3003);
	lp_peer_send(&p, 0);
	status = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(status, 0));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_creat_on_existing_key_attaches_it)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long nfree = lp_nfree(), r;

	holder_start(&p, 1002, len, 0600, -1, -1);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	r = lpsys_share(1002, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1002));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_unshare(r), 0);
	holder_stop(&p);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_creat_excl_on_existing_key_eexist)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long nfree = lp_nfree();

	holder_start(&p, 1003, len, 0600, -1, -1);
	EXPECT_ERRNO(lpsys_share(1003, 0, len, RW, IPC_CREAT | IPC_EXCL | 0600),
		     EEXIST);
	EXPECT_ERRNO(lpsys_share(1003, 0, len, PROT_READ, IPC_CREAT | IPC_EXCL),
		     EEXIST);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	holder_stop(&p);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_absent_key_without_creat_enoent)
{
	long nfree = lp_nfree();

	EXPECT_ERRNO(lpsys_share(1004, 0, lp_size(), RW, 0), ENOENT);
	EXPECT_ERRNO(lpsys_share(1004, 0, lp_size(), PROT_READ, 0644), ENOENT);
	EXPECT_ERRNO(lpsys_share(1004, 0, lp_size(), PROT_READ, IPC_EXCL), ENOENT);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_key_zero_or_negative_einval)
{
	long nfree = lp_nfree();

	EXPECT_ERRNO(lpsys_share(0, 0, lp_size(), RW, IPC_CREAT | 0600), EINVAL);
	EXPECT_ERRNO(lpsys_share(-1, 0, lp_size(), RW, IPC_CREAT | 0600), EINVAL);
	EXPECT_ERRNO(lpsys_share(-1005, 0, lp_size(), RW, IPC_CREAT), EINVAL);
	EXPECT_ERRNO(lpsys_share(INT32_MIN, 0, lp_size(), RW, IPC_CREAT), EINVAL);
	EXPECT_ERRNO(lpsys_share(0, 0, lp_size(), RW, 0), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_attach_len_mismatch_einval)
{
	unsigned long len = 2 * lp_size();
	struct lp_peer p;
	long nfree = lp_nfree();

	holder_start(&p, 1006, len, 0600, -1, -1);
	EXPECT_ERRNO(lpsys_share(1006, 0, lp_size(), RW, 0), EINVAL);
	EXPECT_ERRNO(lpsys_share(1006, 0, 3 * lp_size(), RW, 0), EINVAL);
	EXPECT_ERRNO(lpsys_share(1006, 0, lp_size(), RW, IPC_CREAT | 0600),
		     EINVAL);
	EXPECT_ERRNO(lpsys_share(1006, 0, len + 4096, RW, 0), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	holder_stop(&p);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_len_zero_or_unaligned_einval)
{
	long nfree = lp_nfree();

	EXPECT_ERRNO(lpsys_share(1007, 0, 0, RW, IPC_CREAT | 0600), EINVAL);
	EXPECT_ERRNO(lpsys_share(1007, 0, 4096, RW, IPC_CREAT | 0600), EINVAL);
	EXPECT_ERRNO(lpsys_share(1007, 0, lp_size() / 2, RW, IPC_CREAT), EINVAL);
	EXPECT_ERRNO(lpsys_share(1007, 0, lp_size() + 4096, RW, IPC_CREAT),
		     EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(1007, lp_size()));
}

TEST(share_bad_prot_einval)
{
	long nfree = lp_nfree();

	EXPECT_ERRNO(lpsys_share(1008, 0, lp_size(), RW | 0x8, IPC_CREAT), EINVAL);
	EXPECT_ERRNO(lpsys_share(1008, 0, lp_size(), PROT_READ | PROT_GROWSDOWN,
				 IPC_CREAT), EINVAL);
	EXPECT_ERRNO(lpsys_share(1008, 0, lp_size(), -1, IPC_CREAT), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(1008, lp_size()));
}

TEST(share_unknown_flag_bits_einval)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long nfree = lp_nfree();

	EXPECT_ERRNO(lpsys_share(1009, 0, len, RW, IPC_CREAT | IPC_NOWAIT), EINVAL);
	EXPECT_ERRNO(lpsys_share(1009, 0, len, RW, IPC_CREAT | 0x10000), EINVAL);
	EXPECT_ERRNO(lpsys_share(1009, 0, len, RW, IPC_CREAT | 0x80000000), EINVAL);
	EXPECT_ERRNO(lpsys_share(1009, 0, len, RW, -1), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(1009, len));

	/* The same bits are refused when attaching an existing key. */
	holder_start(&p, 1010, len, 0600, -1, -1);
	EXPECT_ERRNO(lpsys_share(1010, 0, len, RW, IPC_NOWAIT), EINVAL);
	EXPECT_ERRNO(lpsys_share(1010, 0, len, RW, 0x40000), EINVAL);
	holder_stop(&p);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_last_detach_frees_pages_and_key)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree();
	long r;

	r = lpsys_share(1011, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 1011);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_ERRNO(lpsys_share(1011, 0, len, RW, 0), ENOENT);

	/* The key is free again: a new, zeroed segment. */
	r = lpsys_share(1011, 0, len, RW, IPC_CREAT | IPC_EXCL | 0600);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), len));
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

TEST(share_segment_survives_creator_detach)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree();
	struct lp_peer p;
	int status;
	long r;

	if (lp_peer_fork(&p) == 0) {
		lp_peer_recv(&p);
		r = lpsys_share(1012, 0, len, RW, 0);
		ASSERT_TRUE(LP_OK(r));
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 1012));
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);		/* the creator has detached */
		ASSERT_TRUE(lp_check(LP_PTR(r), len, 1012));
		lp_fill(LP_PTR(r), len, 0x1012);
		lp_peer_send(&p, 0);
		lp_peer_recv(&p);
		ASSERT_EQ(lpsys_unshare(r), 0);
		_exit(0);
	}
	ASSERT_GT(p.pid, 0);
	r = lpsys_share(1012, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 1012);
	lp_peer_send(&p, 0);
	lp_peer_recv(&p);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);
	lp_peer_send(&p, 0);
	lp_peer_recv(&p);

	/* Still there for a new attach, with the other process's data. */
	r = lpsys_share(1012, 0, len, RW, 0);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 0x1012));
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree - 1);

	lp_peer_send(&p, 0);
	status = lp_peer_wait(&p);
	EXPECT_TRUE(CHILD_EXITED(status, 0));
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(lp_key_absent(1012, len));
}

TEST(share_more_than_32_segments)
{
	long nfree = lp_nfree(), r[40];
	int n = nfree < 40 ? (int)nfree : 40, i;

	if (n < 33)
		SKIP("only %ld free large pages, need 33 for 33 segments", nfree);
	for (i = 0; i < n; i++) {
		r[i] = lpsys_share(1100 + i, 0, lp_size(), RW, IPC_CREAT | 0600);
		if (!LP_OK(r[i]))
			TH_LOG("segment %d (key %d): %s", i, 1100 + i,
			       strerror(errno));
		ASSERT_TRUE(LP_OK(r[i]));
		lp_fill(LP_PTR(r[i]), lp_size(), 1100 + i);
	}
	EXPECT_EQ(lp_nfree(), nfree - n);
	for (i = 0; i < n; i++)
		EXPECT_TRUE(lp_check(LP_PTR(r[i]), lp_size(), 1100 + i));
	for (i = 0; i < n; i++)
		ASSERT_EQ(lpsys_unshare(r[i]), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	for (i = 0; i < n; i++)
		EXPECT_TRUE(lp_key_absent(1100 + i, lp_size()));
}

/*
 * The permission matrix, a test per row. Each segment of a row is made
 * by a holder (mode, as uid/gid; -1: root) and probed by attaches in
 * children (uid/gid, prot): err is the errno the attach must fail with,
 * 0 if it must work, read back the holder's data where it reads and
 * write a word where it writes.
 */
struct perm_probe {
	int uid, gid, prot, err;
};

struct perm_seg {
	int key, mode, uid, gid;
	struct perm_probe probes[4];	/* up to the first with prot 0 */
	int write_lands;	/* the probes' write is then in the segment */
};

struct perm_row {
	const char *name;
	struct perm_seg segs[2];	/* up to the first with key 0 */
};

/* A segment's key and mode, and its holder's uid and gid (-1: root). */
#define HOLDER(k, m, u, g) .key = (k), .mode = (m), .uid = (u), .gid = (g)
/* A probe by nobody (uid and gid NOBODY), the "other" of a root segment. */
#define OTHER(prot, err) { NOBODY, NOBODY, prot, err }

static const struct perm_row perm_rows[] = {
	{ "share_mode_0600_other_user_eacces", {
		{ HOLDER(1013, 0600, -1, -1), .probes = {
			OTHER(PROT_READ, EACCES),
			OTHER(RW, EACCES),
		} },
	} },
	{ "share_mode_0644_other_read_only", {
		{ HOLDER(1014, 0644, -1, -1), .probes = {
			OTHER(PROT_READ, 0),
			OTHER(RW, EACCES),
			OTHER(PROT_WRITE, EACCES),
		} },
	} },
	/* Created by root:root; nobody (gid NOBODY) is "other". */
	{ "share_mode_0640_other_not_in_group_eacces", {
		{ HOLDER(1015, 0640, -1, -1), .probes = {
			OTHER(PROT_READ, EACCES),
		} },
	} },
	/* Created by uid 0 with gid NOBODY: nobody is in the group. */
	{ "share_mode_0640_group_member_read_only", {
		{ HOLDER(1016, 0640, -1, NOBODY), .probes = {
			OTHER(PROT_READ, 0),
			OTHER(RW, EACCES),
		} },
	} },
	/* 0604: group none, other read. A group member is not "other". */
	{ "share_group_member_gets_group_bits_not_other", {
		{ HOLDER(1017, 0604, -1, NOBODY), .probes = {
			OTHER(PROT_READ, EACCES),
			{ NOBODY - 1, NOBODY - 1, PROT_READ, 0 },
		} },
	} },
	/* nobody's write lands in the segment. */
	{ "share_mode_0666_other_read_write", {
		{ HOLDER(1018, 0666, -1, -1), .probes = {
			OTHER(RW, 0),
		}, .write_lands = 1 },
	} },
	/* 0602: other may write but not read; attaching needs read. */
	{ "share_read_needed_even_for_write_only_mode", {
		{ HOLDER(1019, 0602, -1, -1), .probes = {
			OTHER(PROT_WRITE, EACCES),
			OTHER(RW, EACCES),
			OTHER(PROT_READ, EACCES),
		} },
	} },
	/*
	 * PROT_EXEC needs execute permission, as shmat(SHM_EXEC) does: a
	 * segment others may read is not code others may run until its
	 * mode says so.
	 */
	{ "share_exec_needs_execute_permission", {
		{ HOLDER(1051, 0644, -1, -1), .probes = {
			OTHER(PROT_READ | PROT_EXEC, EACCES),
			OTHER(PROT_READ, 0),
		} },
		{ HOLDER(1052, 0645, -1, -1), .probes = {
			OTHER(PROT_READ | PROT_EXEC, 0),
		} },
	} },
	/* Owned by nobody: the owner may read and write, others nothing. */
	{ "share_mode_zero_means_0600", {
		{ HOLDER(1020, 0, NOBODY, NOBODY), .probes = {
			OTHER(RW, 0),
			{ NOBODY - 1, NOBODY, PROT_READ, EACCES },
		} },
	} },
};

static void perm_row(const void *arg)
{
	const struct perm_row *row = arg;
	unsigned long len = lp_size();
	const struct perm_probe *pr;
	const struct perm_seg *s;
	struct lp_peer p;
	long r;
	int st;

	for (s = row->segs; s < row->segs + 2 && s->key; s++) {
		holder_start(&p, s->key, len, s->mode, s->uid, s->gid);
		for (pr = s->probes; pr < s->probes + 4 && pr->prot; pr++) {
			st = probe(s->key, len, pr->uid, pr->gid, pr->prot,
				   pr->err);
			if (!CHILD_EXITED(st, 0))
				TH_LOG("key %d mode %#o, attach as %d:%d prot %#x",
				       s->key, s->mode, pr->uid, pr->gid,
				       pr->prot);
			EXPECT_TRUE(CHILD_EXITED(st, 0));
		}
		if (s->write_lands) {
			r = lpsys_share(s->key, 0, len, PROT_READ, 0);
			ASSERT_TRUE(LP_OK(r));
			EXPECT_EQ(*(volatile uint32_t *)(LP_PTR(r) + 8),
				  0xfeed0000 | NOBODY);
			ASSERT_EQ(lpsys_unshare(r), 0);
		}
		holder_stop(&p);
	}
}

TEST_TABLE(perm, perm_rows, perm_row)

TEST(share_root_bypasses_mode)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long r;

	/* CAP_IPC_OWNER: root attaches nobody's 0600 segment read-write. */
	holder_start(&p, 1022, len, 0600, NOBODY, NOBODY);
	r = lpsys_share(1022, 0, len, RW, 0);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1022));
	ASSERT_EQ(lpsys_unshare(r), 0);
	holder_stop(&p);
}

TEST(share_read_only_attach_cannot_write)
{
	unsigned long len = lp_size();
	struct lp_peer p;
	long r;

	holder_start(&p, 1023, len, 0644, -1, -1);
	r = lpsys_share(1023, 0, len, PROT_READ, 0);
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1023));
	EXPECT_TRUE(!touch_faults(LP_PTR(r) + 4096, 0));
	EXPECT_TRUE(touch_faults(LP_PTR(r) + 4096, 1));
	/* The faulting write did not reach the segment. */
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1023));
	ASSERT_EQ(lpsys_unshare(r), 0);
	holder_stop(&p);
}

TEST(share_unshare_bad_address_einval)
{
	unsigned long len = 2 * lp_size();
	long nfree = lp_nfree(), r;
	char *normal;

	r = lpsys_share(1024, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(r));
	lp_fill(LP_PTR(r), len, 1024);
	normal = mmap(NULL, 4096, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(normal != MAP_FAILED);

	EXPECT_ERRNO(lpsys_unshare(r + lp_size()), EINVAL);
	EXPECT_ERRNO(lpsys_unshare(r + 4096), EINVAL);
	EXPECT_ERRNO(lpsys_unshare(r + 1), EINVAL);
	EXPECT_ERRNO(lpsys_unshare((unsigned long)normal), EINVAL);
	EXPECT_ERRNO(lpsys_unshare(0), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree - 2);
	EXPECT_TRUE(lp_check(LP_PTR(r), len, 1024));

	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_ERRNO(lpsys_unshare(r), EINVAL);
	EXPECT_EQ(lp_nfree(), nfree);
	munmap(normal, 4096);
}

TEST(share_unshare_accepts_get_mapping)
{
	long nfree = lp_nfree();
	long r = lpsys_get(0, 2 * lp_size(), RW, MAP_SHARED);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_unshare(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(touch_faults(LP_PTR(r), 0));
	EXPECT_ERRNO(lpsys_free(r), EINVAL);
}

TEST(share_free_accepts_keyed_segment)
{
	long nfree = lp_nfree();
	long r = lpsys_share(1025, 0, lp_size(), RW, IPC_CREAT | 0600);

	ASSERT_TRUE(LP_OK(r));
	EXPECT_EQ(lp_nfree(), nfree - 1);
	ASSERT_EQ(lpsys_free(r), 0);
	EXPECT_EQ(lp_nfree(), nfree);
	EXPECT_TRUE(touch_faults(LP_PTR(r), 0));
	EXPECT_TRUE(lp_key_absent(1025, lp_size()));
}

TEST(share_keys_are_independent)
{
	unsigned long len = lp_size();
	long nfree = lp_nfree(), a, b;

	a = lpsys_share(1026, 0, len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(a));
	b = lpsys_share(1027, 0, 2 * len, RW, IPC_CREAT | 0600);
	ASSERT_TRUE(LP_OK(b));
	EXPECT_EQ(lp_nfree(), nfree - 3);
	lp_fill(LP_PTR(a), len, 1026);
	lp_fill(LP_PTR(b), 2 * len, 1027);
	EXPECT_TRUE(lp_check(LP_PTR(a), len, 1026));
	ASSERT_EQ(lpsys_unshare(a), 0);
	EXPECT_TRUE(lp_key_absent(1026, len));
	EXPECT_TRUE(lp_check(LP_PTR(b), 2 * len, 1027));
	EXPECT_EQ(lp_nfree(), nfree - 2);
	ASSERT_EQ(lpsys_unshare(b), 0);
	EXPECT_EQ(lp_nfree(), nfree);
}

/*
 * Permission is checked before the length: a stranger learns nothing
 * about a segment's size (SysV shm would say EINVAL first).
 */
TEST(share_denied_before_len_is_checked)
{
	struct lp_peer p;
	int st;

	holder_start(&p, 1040, 2 * lp_size(), 0600, -1, -1);
	st = probe(1040, lp_size(), NOBODY, NOBODY, PROT_READ, EACCES);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	st = probe(1040, 3 * lp_size(), NOBODY, NOBODY, RW, EACCES);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	holder_stop(&p);
}

/* A word in memory shared with the children, for "I am done" flags. */
static volatile int *shared_flags(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ASSERT_TRUE(p != MAP_FAILED);
	return p;
}

/*
 * A child that creates key (n pages), sets flag[0] (1 done, -errno
 * failed) and holds the segment until its pipe closes. Every free page
 * is dirtied first: the creator then zeroes its pages itself, which is
 * the window these tests need (largepage_zerod may have zeroed the pool
 * in the background, and a create from zeroed pages is over at once).
 */
static pid_t big_creator(struct lp_peer *p, int key, unsigned long len,
			 volatile int *flag)
{
	long r;

	ASSERT_EQ(lp_dirty_free_pages(), 0);
	if (lp_peer_fork(p) == 0) {
		r = lpsys_share(key, 0, len, RW, IPC_CREAT | IPC_EXCL | 0600);
		*flag = LP_OK(r) ? 1 : -errno;
		if (!LP_OK(r))
			_exit(1);
		lp_peer_recv(p);
		_exit(lpsys_unshare(r) ? 2 : 0);
	}
	ASSERT_GT(p->pid, 0);
	return p->pid;
}

/* Wait until the pool has given out its pages (zeroing has begun). */
static void wait_pages_taken(long nfree, long n, volatile int *done)
{
	int i;

	for (i = 0; i < 10000 && lp_nfree() > nfree - n; i++)
		usleep(1000);
	ASSERT_LE(lp_nfree(), nfree - n);
	if (*done)
		SKIP("the creator zeroed %ld pages before the probe started (a fast machine); nothing to race",
		     n);
}

/*
 * The key table's lock is not held while a new segment is zeroed: while
 * one process creates a segment of nearly the whole pool, another
 * creates and drops a small one and lists /proc/largepage_segments, and
 * an attacher of the big one that is killed while it waits dies at once.
 */
TEST(share_create_zeroes_outside_the_key_lock)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), n = nfree - 2, r;
	volatile int *flags = shared_flags();
	int small_first, list_first, kill_first, st;
	struct lp_peer big;
	char buf[4096];
	pid_t waiter;
	FILE *f;

	ASSERT_GE(n, 8);
	big_creator(&big, 1041, n * lp, &flags[0]);
	wait_pages_taken(nfree, n, &flags[0]);

	r = lpsys_share(1042, 0, lp, RW, IPC_CREAT | IPC_EXCL | 0600);
	small_first = !flags[0];
	ASSERT_TRUE(LP_OK(r));
	EXPECT_TRUE(lp_zeroed(LP_PTR(r), lp));
	ASSERT_EQ(lpsys_unshare(r), 0);

	f = fopen("/proc/largepage_segments", "r");
	ASSERT_TRUE(f != NULL);
	while (fread(buf, 1, sizeof(buf), f) > 0)
		;
	fclose(f);
	list_first = !flags[0];

	waiter = fork();
	if (waiter == 0) {
		r = lpsys_share(1041, 0, n * lp, RW, 0);
		_exit(3);
	}
	ASSERT_GT(waiter, 0);
	usleep(20000);
	kill(waiter, SIGKILL);
	ASSERT_EQ(waitpid(waiter, &st, 0), waiter);
	kill_first = !flags[0];
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGKILL));

	if (!small_first)
		TH_LOG("a one-page create waited for the big one's zeroing");
	if (!list_first)
		TH_LOG("reading /proc/largepage_segments waited for the zeroing");
	if (!kill_first)
		TH_LOG("an attacher killed while waiting lived until the zeroing ended");
	EXPECT_TRUE(small_first && list_first && kill_first);

	while (!flags[0])
		usleep(10000);
	EXPECT_EQ(flags[0], 1);
	EXPECT_EQ(lp_nfree(), nfree - n);
	lp_peer_send(&big, 0);
	st = lp_peer_wait(&big);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
}

/*
 * The creator is killed while it zeroes: its segment and key go, and an
 * attacher that was waiting for it looks the key up again, creates the
 * segment itself (IPC_CREAT) and gets zeroed pages.
 */
TEST(share_creator_killed_while_zeroing_waiter_creates)
{
	unsigned long lp = lp_size();
	long nfree = lp_nfree(), n = nfree - 2, r;
	volatile int *flags = shared_flags();
	struct lp_peer big, w;
	int st;

	ASSERT_GE(n, 8);
	big_creator(&big, 1043, n * lp, &flags[0]);
	wait_pages_taken(nfree, n, &flags[0]);

	if (lp_peer_fork(&w) == 0) {
		r = lpsys_share(1043, 0, n * lp, RW, IPC_CREAT | 0600);
		flags[1] = LP_OK(r) ? 1 : -errno;
		if (!LP_OK(r))
			_exit(1);
		if (!lp_zeroed(LP_PTR(r), n * lp))
			_exit(2);
		lp_fill(LP_PTR(r), n * lp, 1043);
		lp_peer_send(&w, 0);
		lp_peer_recv(&w);
		_exit(lpsys_unshare(r) ? 3 : 0);
	}
	ASSERT_GT(w.pid, 0);
	usleep(20000);
	if (flags[0])
		SKIP("the creator finished zeroing before it could be killed");
	kill(big.pid, SIGKILL);
	st = lp_peer_wait(&big);
	EXPECT_TRUE(CHILD_SIGNALED(st, SIGKILL));

	/* The waiter's own create: its pages, once the creator's are back. */
	EXPECT_EQ(lp_peer_recv(&w), 0);
	EXPECT_EQ(flags[1], 1);
	EXPECT_EQ(lp_nfree(), nfree - n);
	lp_peer_send(&w, 0);
	st = lp_peer_wait(&w);
	EXPECT_TRUE(CHILD_EXITED(st, 0));
	EXPECT_EQ(lp_settle_nfree(nfree), nfree);
	EXPECT_TRUE(lp_key_absent(1043, n * lp));
}
