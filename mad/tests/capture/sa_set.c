/*
 * sa_set: an independent encoder for SA records, built on libibmad.
 *
 * Not part of the build or of CI.  Run it under ibsim (see capture.sh):
 *   SIM_HOST=Hca3 ibsim-run ./sa_set sr|mcm|pr
 *
 * Every record field is written with libibmad's own field table
 * (mad_encode_field), never with hand-computed offsets, so the bytes are an
 * independent reference for ibsm-mad's record decoders.  The program prints
 * the encoded record ("encoded:" hex lines, 16 bytes a line) and, for sr and
 * mcm, sends it to the SA with SubnAdmSet and prints the record the SA sent
 * back ("returned:").  ibsim's Verbose 3 dump records the full MADs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <infiniband/mad.h>

static void hex(const char *title, const uint8_t *p, int n)
{
	printf("%s\n", title);
	for (int i = 0; i < n; i++)
		printf("%02x%s", p[i], (i % 16 == 15 || i == n - 1) ? "\n" : " ");
}

static void gid(uint8_t *g, uint64_t prefix, uint64_t guid)
{
	for (int i = 0; i < 8; i++) {
		g[i] = (uint8_t)(prefix >> (56 - 8 * i));
		g[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

int main(int argc, char **argv)
{
	int classes[] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS };
	uint8_t buf[IB_SA_DATA_SIZE];
	uint8_t g[16];
	uint32_t v;
	uint64_t v64;
	ib_sa_call_t sa = { 0 };
	ib_portid_t sm = { 0 };
	const char *what = argc > 1 ? argv[1] : "sr";
	int len;

	setvbuf(stdout, NULL, _IONBF, 0);
	memset(buf, 0, sizeof buf);
	if (!strcmp(what, "sr")) {
		/* ServiceRecord: ID, GID (Hca3 port GUID), P_Key, lease, key, name, data8[0..]. */
		v64 = 0x1000000000000abcULL; mad_encode_field(buf, IB_SA_SR_ID_F, &v64);
		gid(g, 0xfe80000000000000ULL, 0x100007); mad_encode_field(buf, IB_SA_SR_GID_F, g);
		v = 0xffff; mad_encode_field(buf, IB_SA_SR_PKEY_F, &v);
		v = 0xffffffff; mad_encode_field(buf, IB_SA_SR_LEASE_F, &v);
		memset(g, 0, 16); g[0] = 0x11; g[15] = 0x22; mad_encode_field(buf, IB_SA_SR_KEY_F, g);
		{
			char name[64] = "ibsm-fixture-service";
			mad_encode_field(buf, IB_SA_SR_NAME_F, name);
		}
		{
			uint8_t data[64] = { 0 };
			for (int i = 0; i < 64; i++) data[i] = (uint8_t)i;
			mad_encode_field(buf, IB_SA_SR_DATA_F, data);
		}
		sa.attrid = IB_SA_ATTR_SERVICERECORD;
		/* ServiceID, GID, P_Key, Lease, Key, Name (components 0..6) */
		sa.mask = 0x7f;
		len = 176;
	} else if (!strcmp(what, "mcm")) {
		/* MCMemberRecord: join the IPoIB broadcast group of P_Key 0xffff as a full member. */
		gid(g, 0xff12401bffff0000ULL, 0x00000000ffffffffULL);
		mad_encode_field(buf, IB_SA_MCM_MGID_F, g);
		gid(g, 0xfe80000000000000ULL, 0x100007);
		mad_encode_field(buf, IB_SA_MCM_PORTGID_F, g);
		v = 0x0b1b; mad_encode_field(buf, IB_SA_MCM_QKEY_F, &v);
		v = 0xffff; mad_encode_field(buf, IB_SA_MCM_PKEY_F, &v);
		v = 1; mad_encode_field(buf, IB_SA_MCM_JOIN_STATE_F, &v);
		sa.attrid = IB_SA_ATTR_MCRECORD;
		/* MGID, PortGID, Q_Key, P_Key, JoinState */
		sa.mask = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 7) | (1 << 16);
		len = 52;
	} else if (!strcmp(what, "pr")) {
		/* PathRecord, encode only: Hca3 (lid 5) -> Hca4 (lid 6), SL 3, NumbPath 1. */
		gid(g, 0xfe80000000000000ULL, 0x10000a); mad_encode_field(buf, IB_SA_PR_DGID_F, g);
		gid(g, 0xfe80000000000000ULL, 0x100007); mad_encode_field(buf, IB_SA_PR_SGID_F, g);
		v = 6; mad_encode_field(buf, IB_SA_PR_DLID_F, &v);
		v = 5; mad_encode_field(buf, IB_SA_PR_SLID_F, &v);
		v = 1; mad_encode_field(buf, IB_SA_PR_NPATH_F, &v);
		v = 3; mad_encode_field(buf, IB_SA_PR_SL_F, &v);
		hex("encoded:", buf, IB_SA_PR_RECSZ);
		return 0;
	} else {
		fprintf(stderr, "usage: sa_set sr|mcm|pr\n");
		return 2;
	}
	hex("encoded:", buf, len);

	struct ibmad_port *port = mad_rpc_open_port(NULL, 0, classes, 3);
	if (!port) {
		fprintf(stderr, "cannot open port\n");
		return 1;
	}
	if (ib_resolve_smlid_via(&sm, 1000, port) < 0) {
		fprintf(stderr, "cannot resolve SM lid\n");
		return 1;
	}
	sa.method = IB_MAD_METHOD_SET;
	if (!sa_rpc_call(port, buf, &sm, &sa, 1000)) {
		fprintf(stderr, "SA Set failed\n");
		return 1;
	}
	hex("returned:", buf, len);
	mad_rpc_close_port(port);
	return 0;
}
