//go:build linux && cgo && rdma

// Small C helpers for the verbs transport: one cgo call posts or polls many
// work requests.
#ifndef WEFT_RDMA_VERBS_H
#define WEFT_RDMA_VERBS_H
#include <infiniband/verbs.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// wf_wr is one send-side work request, built in Go, posted in batches.
// For IBV_WR_BIND_MW: mw and mr are the window and the region it is bound
// over, laddr/len the bound range, rkey the window's new key and access its
// rights. For IBV_WR_LOCAL_INV: rkey is the key to invalidate.
typedef struct {
	uint64_t wr_id;
	uint64_t laddr;
	uint64_t raddr;
	uint64_t mw;
	uint64_t mr;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t opcode;
	uint32_t flags;
	uint32_t access;
} wf_wr;

// wf_wc is a compact work completion.
typedef struct {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t vendor_err;
	uint32_t pad;
} wf_wc;

#define WF_MAX_BATCH 64

// wf_post_send posts n (<= WF_MAX_BATCH) work requests as one linked list:
// one call into the provider. It returns 0 or an errno, and in *bad the
// index of the first request not posted.
static inline int wf_post_send(struct ibv_qp *qp, const wf_wr *w, int n, int *bad) {
	struct ibv_send_wr wrs[WF_MAX_BATCH];
	struct ibv_sge sges[WF_MAX_BATCH];
	struct ibv_send_wr *badwr = NULL;
	if (n <= 0 || n > WF_MAX_BATCH) return EINVAL;
	memset(wrs, 0, sizeof(struct ibv_send_wr) * n);
	for (int i = 0; i < n; i++) {
		wrs[i].wr_id = w[i].wr_id;
		wrs[i].opcode = (enum ibv_wr_opcode)w[i].opcode;
		wrs[i].send_flags = w[i].flags;
		wrs[i].next = (i + 1 < n) ? &wrs[i + 1] : NULL;
		switch (w[i].opcode) {
		case IBV_WR_BIND_MW:
			wrs[i].bind_mw.mw = (struct ibv_mw *)(uintptr_t)w[i].mw;
			wrs[i].bind_mw.rkey = w[i].rkey;
			wrs[i].bind_mw.bind_info.mr = (struct ibv_mr *)(uintptr_t)w[i].mr;
			wrs[i].bind_mw.bind_info.addr = w[i].laddr;
			wrs[i].bind_mw.bind_info.length = w[i].len;
			wrs[i].bind_mw.bind_info.mw_access_flags = w[i].access;
			break;
		case IBV_WR_LOCAL_INV:
			wrs[i].invalidate_rkey = w[i].rkey;
			break;
		default:
			sges[i].addr = w[i].laddr;
			sges[i].length = w[i].len;
			sges[i].lkey = w[i].lkey;
			wrs[i].sg_list = &sges[i];
			wrs[i].num_sge = 1;
			wrs[i].wr.rdma.remote_addr = w[i].raddr;
			wrs[i].wr.rdma.rkey = w[i].rkey;
		}
	}
	int rc = ibv_post_send(qp, wrs, &badwr);
	*bad = badwr ? (int)(badwr - wrs) : n;
	// A type-2 window's key is the one of its last bind: the provider checks
	// the next bind against mw->rkey, which the application keeps current.
	for (int i = 0; i < *bad; i++) {
		if (w[i].opcode == IBV_WR_BIND_MW) ((struct ibv_mw *)(uintptr_t)w[i].mw)->rkey = w[i].rkey;
	}
	return rc;
}

// wf_alloc_mw2 allocates a type-2 memory window on pd, or returns NULL
// with errno set (EOPNOTSUPP when the provider has none).
static inline struct ibv_mw *wf_alloc_mw2(struct ibv_pd *pd) { return ibv_alloc_mw(pd, IBV_MW_TYPE_2); }
static inline int wf_dealloc_mw(struct ibv_mw *mw) { return ibv_dealloc_mw(mw); }
static inline uint32_t wf_inc_rkey(uint32_t rkey) { return ibv_inc_rkey(rkey); }

// wf_post_srq posts n receive buffers of one size and key, in one call.
static inline int wf_post_srq(struct ibv_srq *srq, const uint64_t *ids, const uint64_t *addrs, uint32_t len, uint32_t lkey, int n) {
	struct ibv_recv_wr wrs[WF_MAX_BATCH];
	struct ibv_sge sges[WF_MAX_BATCH];
	struct ibv_recv_wr *bad = NULL;
	if (n <= 0 || n > WF_MAX_BATCH) return EINVAL;
	for (int i = 0; i < n; i++) {
		sges[i].addr = addrs[i];
		sges[i].length = len;
		sges[i].lkey = lkey;
		wrs[i].wr_id = ids[i];
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].next = (i + 1 < n) ? &wrs[i + 1] : NULL;
	}
	return ibv_post_srq_recv(srq, wrs, &bad);
}

// wf_poll polls up to n (<= WF_MAX_BATCH) completions in one call.
static inline int wf_poll(struct ibv_cq *cq, wf_wc *out, int n) {
	struct ibv_wc wc[WF_MAX_BATCH];
	if (n > WF_MAX_BATCH) n = WF_MAX_BATCH;
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].byte_len = wc[i].byte_len;
		out[i].qp_num = wc[i].qp_num;
		out[i].vendor_err = wc[i].vendor_err;
	}
	return got;
}

// wf_arm asks for an event on the next completion.
static inline int wf_arm(struct ibv_cq *cq) { return ibv_req_notify_cq(cq, 0); }

// wf_wait sleeps until the completion channel or wakefd is readable or
// timeout_ms passes, consuming the event. It returns 1 after a completion
// event, 0 on timeout or wake, -errno on error. Call wf_arm and poll the CQ
// once more before it, or a completion that came before arming is missed.
static inline int wf_wait(struct ibv_comp_channel *ch, int wakefd, int timeout_ms) {
	struct pollfd fds[2] = {{ch->fd, POLLIN, 0}, {wakefd, POLLIN, 0}};
	int rc = poll(fds, 2, timeout_ms);
	if (rc < 0) return errno == EINTR ? 0 : -errno;
	int got = 0;
	if (fds[0].revents & POLLIN) {
		struct ibv_cq *evcq; void *evctx;
		if (ibv_get_cq_event(ch, &evcq, &evctx) == 0) { ibv_ack_cq_events(evcq, 1); got = 1; }
	}
	if (fds[1].revents & POLLIN) {
		uint64_t v; ssize_t r = read(wakefd, &v, sizeof v); (void)r;
	}
	return got;
}

// wf_async_next waits up to timeout_ms for an asynchronous event of ctx
// (whose async_fd is non-blocking) or for wakefd, reads one event, copies
// what the caller needs and acknowledges it at once (so destroying a QP
// never waits for it). It returns 1 with *type set, and *qpn for QP events
// or *port for port events; 0 on timeout, wake or no event; -errno on error.
static inline int wf_async_next(struct ibv_context *ctx, int wakefd, int timeout_ms, int *type, uint32_t *qpn, int *port) {
	struct pollfd fds[2] = {{ctx->async_fd, POLLIN, 0}, {wakefd, POLLIN, 0}};
	int rc = poll(fds, 2, timeout_ms);
	if (rc < 0) return errno == EINTR ? 0 : -errno;
	if (fds[1].revents & POLLIN) {
		uint64_t v; ssize_t r = read(wakefd, &v, sizeof v); (void)r;
	}
	if (!(fds[0].revents & POLLIN)) return 0;
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev) != 0) return errno == EAGAIN ? 0 : -errno;
	*type = ev.event_type;
	*qpn = 0;
	*port = 0;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR: case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST: case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED:
		*qpn = ev.element.qp->qp_num;
		break;
	case IBV_EVENT_PORT_ACTIVE: case IBV_EVENT_PORT_ERR: case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE: case IBV_EVENT_SM_CHANGE: case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		*port = ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 1;
}

static inline int wf_async_fd(struct ibv_context *ctx) { return ctx->async_fd; }

static inline int wf_set_nonblock(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0) return -errno;
	if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
	return 0;
}

static inline int wf_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	return ibv_query_port(ctx, port, attr);
}

static inline struct ibv_qp *wf_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq, uint32_t sq, uint32_t inl, uint32_t *got_inline, uint32_t *got_sq) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = sq;
	a.cap.max_send_sge = 1;
	a.cap.max_inline_data = inl;
	struct ibv_qp *qp = ibv_create_qp(pd, &a);
	if (!qp && inl) {
		a.cap.max_inline_data = 0;
		qp = ibv_create_qp(pd, &a);
	}
	if (qp) { *got_inline = a.cap.max_inline_data; *got_sq = a.cap.max_send_wr; }
	return qp;
}

static inline int wf_qp_init(struct ibv_qp *qp, uint8_t port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	return rc ? rc : 0;
}

static inline int wf_qp_rtr(struct ibv_qp *qp, uint8_t port, uint32_t dqpn, uint32_t rpsn, uint32_t mtu_enum,
		const uint8_t *dgid, uint16_t dlid, int sgid_index, uint8_t rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu_enum;
	a.dest_qp_num = dqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = rd_atomic;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = dlid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = port;
	if (sgid_index >= 0) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)sgid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = 0;
		a.ah_attr.grh.flow_label = 0;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static inline int wf_qp_rts(struct ibv_qp *qp, uint32_t psn, uint8_t timeout, uint8_t retry, uint8_t rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7; // credits prevent RNR; this only guards against a bug
	a.sq_psn = psn;
	a.max_rd_atomic = rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline int wf_qp_error(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline int wf_qp_state(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	if (rc) return -rc;
	return a.qp_state;
}

static inline struct ibv_mr *wf_reg_mr(struct ibv_pd *pd, uint64_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, access);
}

static inline int wf_dev_count(struct ibv_device **l) { int n = 0; while (l[n]) n++; return n; }
static inline struct ibv_device *wf_dev_at(struct ibv_device **l, int i) { return l[i]; }
#endif
