/* SPDX-License-Identifier: BSD-2-Clause */
/* Capture file reader (see pcap_reader.h). */
/* libpcap's headers use the BSD types (u_char, u_int) that strict C11 hides. */
#define _DEFAULT_SOURCE 1

#include "trace/pcap_reader.h"

#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/errors.h"

#define NS_PER_S 1000000000u

struct iwarp_pcap_reader {
    pcap_t *pcap;
    int dlt;
    enum iwarp_pkt_link link;
    uint64_t count;
    char errtext[PCAP_ERRBUF_SIZE];
};

int iwarp_pcap_link_from_dlt(int dlt, enum iwarp_pkt_link *out)
{
    if (out == NULL)
        return IWARP_ERR_INVAL;
    switch (dlt) {
    case DLT_NULL:
        *out = IWARP_PKT_LINK_NULL;
        return 0;
    case DLT_LOOP:
        *out = IWARP_PKT_LINK_LOOP;
        return 0;
    case DLT_EN10MB:
        *out = IWARP_PKT_LINK_ETHERNET;
        return 0;
    case DLT_LINUX_SLL:
        *out = IWARP_PKT_LINK_LINUX_SLL;
        return 0;
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
        *out = IWARP_PKT_LINK_LINUX_SLL2;
        return 0;
#endif
    case DLT_RAW:
        *out = IWARP_PKT_LINK_RAW;
        return 0;
#ifdef DLT_IPV4
    case DLT_IPV4:
        *out = IWARP_PKT_LINK_IPV4;
        return 0;
#endif
#ifdef DLT_IPV6
    case DLT_IPV6:
        *out = IWARP_PKT_LINK_IPV6;
        return 0;
#endif
    default:
        return IWARP_ERR_PCAP_LINKTYPE;
    }
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    if (dst != NULL && cap > 0)
        snprintf(dst, cap, "%s", src);
}

int iwarp_pcap_reader_open(struct iwarp_pcap_reader **out, const char *path, char *errbuf,
                           size_t errlen)
{
    if (out == NULL || path == NULL)
        return IWARP_ERR_INVAL;
    *out = NULL;
    struct iwarp_pcap_reader *r = calloc(1, sizeof *r);
    if (r == NULL)
        return IWARP_ERR_NOMEM;
    /* NANO: libpcap scales microsecond files up, so ts.tv_usec always holds nanoseconds */
    r->pcap = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, r->errtext);
    if (r->pcap == NULL) {
        copy_text(errbuf, errlen, r->errtext);
        free(r);
        return IWARP_ERR_PCAP;
    }
    r->dlt = pcap_datalink(r->pcap);
    int rc = iwarp_pcap_link_from_dlt(r->dlt, &r->link);
    if (rc != 0) {
        const char *name = pcap_datalink_val_to_name(r->dlt);
        if (errbuf != NULL && errlen > 0)
            snprintf(errbuf, errlen, "link-layer type %d (%s) not supported", r->dlt,
                     name != NULL ? name : "unknown");
        pcap_close(r->pcap);
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void iwarp_pcap_reader_close(struct iwarp_pcap_reader *r)
{
    if (r == NULL)
        return;
    pcap_close(r->pcap);
    free(r);
}

enum iwarp_pkt_link iwarp_pcap_reader_link(const struct iwarp_pcap_reader *r)
{
    return r->link;
}

int iwarp_pcap_reader_dlt(const struct iwarp_pcap_reader *r)
{
    return r->dlt;
}

int iwarp_pcap_reader_next(struct iwarp_pcap_reader *r, struct iwarp_pcap_packet *out)
{
    if (r == NULL || out == NULL)
        return IWARP_ERR_INVAL;
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc = pcap_next_ex(r->pcap, &h, &data);
    if (rc == PCAP_ERROR_BREAK)
        return IWARP_ERR_PCAP_END; /* offline: no more packets */
    if (rc != 1) {
        copy_text(r->errtext, sizeof r->errtext, pcap_geterr(r->pcap));
        return IWARP_ERR_PCAP;
    }
    memset(out, 0, sizeof *out);
    out->index = ++r->count;
    out->ts_ns = (uint64_t)h->ts.tv_sec * NS_PER_S + (uint64_t)h->ts.tv_usec;
    out->caplen = h->caplen;
    out->wire_len = h->len;
    out->data = data;
    out->decode_rc = iwarp_pkt_decode(r->link, data, h->caplen, h->len, &out->pkt);
    return 0;
}

const char *iwarp_pcap_reader_errtext(const struct iwarp_pcap_reader *r)
{
    return r != NULL ? r->errtext : "";
}
