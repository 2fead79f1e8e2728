/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf: the human-readable table (perftest's columns, with the TCP baseline and the ratio
 * beside them under --compare-tcp) and the --json document.
 */
#include <inttypes.h>

#include "api/api_internal.h" /* iwarp_api_stats_str */
#include "perf.h"

#define RULE                                                                                    \
    "-----------------------------------------------------------------------------------------" \
    "----------\n"

static const char *mode_name(const struct perf_opts *o)
{
    return o->busy_poll ? "busy-poll (caller progress, spinning on the CQ, as perftest)"
                        : "events (progress thread, completion channel; perftest polls: "
                          "--busy-poll)";
}

/* Where bandwidth operations in flight take their data (perf_layout_init). */
static const char *buffers_name(const struct perf_opts *o)
{
    return o->verify ? "one per operation in flight (--verify)"
                     : "one per QP, shared by the operations in flight (as perftest)";
}

/* The lower layer in words (the header, the plot's title). */
void perf_out_transport(const struct perf_opts *o, char *buf, size_t len)
{
    if (o->sctp)
        snprintf(buf, len, "SCTP over UDP, MTU %u", o->sctp_mtu ? o->sctp_mtu : 1500u);
    else
        snprintf(buf, len, "TCP, MPA rev %u, CRC %s", o->mpa_rev, o->crc ? "on" : "off");
}

/* Print the test's banner and the column titles. */
void perf_out_header(FILE *f, const struct perf_report *r)
{
    const struct perf_opts *o = r->o;
    fprintf(f, RULE);
    fprintf(f, "                    %s %s Test (libiwarp)\n", perf_op_title(o->op),
            o->lat ? "Latency" : "BW");
    fprintf(f, " Connection      : %-34s Number of qps : %u\n", r->connection, o->qps);
    char t[64];
    perf_out_transport(o, t, sizeof t);
    fprintf(f, " Transport       : %-34s TX depth      : %u\n", t, o->lat ? 1 : o->qd);
    fprintf(f, " Completion      : %s\n", mode_name(o));
    if (!o->sctp) {
        char cc[32];
        perf_tcp_cc(cc, sizeof cc);
        fprintf(f, " TCP congestion  : %s (this host's default for new sockets)\n", cc);
    }
    const char *pin = o->host  ? "not pinned (remote)"
                      : o->pin ? "client CPU 0, server CPU 1"
                               : "off (--no-pin)";
    fprintf(f, " Pinning         : %-34s Inline        : <= 64 B\n", pin);
    char it[64];
    if (o->duration > 0)
        snprintf(it, sizeof it, "%.3g s per size and pass", o->duration);
    else
        snprintf(it, sizeof it, "%" PRIu64 " per QP%s", o->iters,
                 o->iters_auto && !o->lat ? " (<= 1 GiB per size)" : "");
    fprintf(f, " Iterations      : %-34s Verify        : %s\n", it, o->verify ? "on" : "off");
    fprintf(f, " Passes          : %u per size%s\n", o->passes,
            o->passes > 1 ? ", figures are medians over the passes" : "");
    if (o->lat)
        fprintf(f, " Latency         : %s\n",
                o->op == PERF_OP_READ ? "whole Read (as ib_read_lat)" : "one-way, RTT/2");
    else
        fprintf(f, " Buffers         : %s\n", buffers_name(o));
    fprintf(f, " Units           : %s; BW peak = best 10 ms window%s\n",
            o->units == PERF_UNITS_PERFTEST
                ? "1 MB = 2^20 octets (MiB, as perftest)"
                : "1 MB = 10^6 octets (perftest: 2^20, --units perftest)",
            !o->compare_tcp ? ""
            : o->lat        ? "; TCP = plain TCP (NODELAY ping-pong), same run"
            : o->qps == 1   ? "; TCP = plain TCP (one stream, Nagle on), same run"
                            : "; TCP = plain TCP (a stream per QP, Nagle on), same run");
    fprintf(f, RULE);
    if (o->lat)
        fprintf(f, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
                   "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
                   "percentile[usec]");
    else
        fprintf(f, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
                   "MsgRate[Mpps]");
    if (o->passes > 1)
        fprintf(f, "   %s", o->lat ? "typical min..max" : "average min..max");
    if (o->compare_tcp)
        fprintf(f, "   %s   ratio", o->lat ? "TCP t_typical[usec]" : "TCP BW average[MB/sec]");
    fprintf(f, "\n");
    fflush(f);
}

/* Print one size's row. */
void perf_out_row(FILE *f, const struct perf_report *r, const struct perf_row *w)
{
    const struct perf_opts *o = r->o;
    if (o->lat)
        fprintf(f, " %-6u %-10" PRIu64 " %-14.2f %-12.2f %-16.2f %-14.2f %-15.2f %-22.2f %-22.2f",
                w->size, w->lat.iters, w->lat.min, w->lat.max, w->lat.typical, w->lat.avg,
                w->lat.stdev, w->lat.p99, w->lat.p999);
    else
        fprintf(f, " %-10u %-14" PRIu64 " %-18.2f %-20.2f %-13.6f", w->size, w->bw.iters,
                w->bw.peak / perf_mb(o), w->bw.avg / perf_mb(o), w->bw.mpps);
    if (o->passes > 1) {
        double k = o->lat ? 1 : 1 / perf_mb(o);
        char range[48];
        snprintf(range, sizeof range, "%.2f..%.2f", w->lo * k, w->hi * k);
        fprintf(f, "   %-16s", range);
    }
    if (w->have_tcp)
        fprintf(f, "   %-22.2f %.2f", o->lat ? w->tcp_lat.typical : w->tcp_bw.avg / perf_mb(o),
                w->ratio);
    if (w->verify_errors)
        fprintf(f, "   VERIFY: %" PRIu64 " octets wrong", w->verify_errors);
    fprintf(f, "\n");
    fflush(f);
}

/* Close the table (with the meaning of the ratio under --compare-tcp). */
void perf_out_footer(FILE *f, const struct perf_report *r)
{
    fprintf(f, RULE);
    if (r->o->compare_tcp)
        fprintf(f, " ratio = libiwarp / plain TCP per pass (%s), median of %u passes\n",
                r->o->lat ? "t_typical; < 1 is faster" : "average bandwidth; > 1 is faster",
                r->o->passes);
}

static void json_bw(FILE *f, const struct perf_bw *b, double lo, double hi, double mb)
{
    fprintf(f,
            "\"bw_peak_MBps\": %.3f, \"bw_avg_MBps\": %.3f, \"bw_avg_min_MBps\": %.3f, "
            "\"bw_avg_max_MBps\": %.3f, \"msg_rate_Mpps\": %.6f, \"iterations\": %" PRIu64
            ", \"cpu_s_per_GB\": %.4f",
            b->peak / mb, b->avg / mb, lo / mb, hi / mb, b->mpps, b->iters, b->cpu_s_per_gb);
}

static void json_lat(FILE *f, const struct perf_lat *l, double lo, double hi)
{
    fprintf(f,
            "\"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": %.3f, "
            "\"t_typical_min_us\": %.3f, \"t_typical_max_us\": %.3f, \"t_avg_us\": %.3f, "
            "\"t_stdev_us\": %.3f, \"t_p99_us\": %.3f, \"t_p99_9_us\": %.3f, "
            "\"iterations\": %" PRIu64,
            l->min, l->max, l->typical, lo, hi, l->avg, l->stdev, l->p99, l->p999, l->iters);
}

/* Print the whole report as one JSON document (--json). The strings printed are ours (no
 * escaping needed except the connection, which is an address). */
void perf_out_json(FILE *f, const struct perf_report *r)
{
    const struct perf_opts *o = r->o;
    fprintf(f, "{\n  \"tool\": \"iwarp perf\",\n  \"libiwarp\": \"%s\",\n", iwarp_version());
    fprintf(f, "  \"test\": \"%s\",\n  \"op\": \"%s\",\n  \"measure\": \"%s\",\n",
            perf_op_title(o->op), perf_op_name(o->op), o->lat ? "latency" : "bandwidth");
    fprintf(f, "  \"connection\": \"%s\",\n  \"transport\": \"%s\",\n", r->connection,
            o->sctp ? "sctp" : "tcp");
    if (o->sctp) { /* no MPA and no TCP: revision, CRC and congestion control are null */
        fprintf(f,
                "  \"sctp_mtu\": %u,\n  \"mpa_rev\": null,\n  \"crc\": null,\n"
                "  \"tcp_congestion_control\": null,\n",
                o->sctp_mtu ? o->sctp_mtu : 1500u);
    } else {
        char cc[32];
        perf_tcp_cc(cc, sizeof cc);
        fprintf(f, "  \"mpa_rev\": %u,\n  \"crc\": %s,\n  \"tcp_congestion_control\": \"%s\",\n",
                o->mpa_rev, o->crc ? "true" : "false", cc);
    }
    fprintf(f,
            "  \"qps\": %u,\n  \"qd\": %u,\n"
            "  \"completion\": \"%s\",\n  \"pinned\": %s,\n  \"verify\": %s,\n"
            "  \"buffers\": \"%s\",\n  \"passes\": %u,\n  \"duration_s\": %.6g,\n",
            o->qps, o->qd, o->busy_poll ? "busy-poll" : "events",
            !o->host && o->pin ? "true" : "false", o->verify ? "true" : "false",
            o->lat      ? "latency"
            : o->verify ? "per-operation"
                        : "shared",
            o->passes, o->duration);
    fprintf(f, "  \"units\": {\"MBps\": \"%s octets per second\", \"MB\": %s, \"us\": \"%s\"},\n",
            o->units == PERF_UNITS_PERFTEST ? "2^20" : "10^6",
            o->units == PERF_UNITS_PERFTEST ? "1048576" : "1000000",
            o->op == PERF_OP_READ ? "microseconds, whole Read" : "microseconds, RTT/2");
    fprintf(f, "  \"results\": [");
    for (uint32_t i = 0; i < r->nrows; i++) {
        const struct perf_row *w = &r->rows[i];
        fprintf(f, "%s\n    {\"bytes\": %u, ", i ? "," : "", w->size);
        if (o->lat)
            json_lat(f, &w->lat, w->lo, w->hi);
        else
            json_bw(f, &w->bw, w->lo, w->hi, perf_mb(o));
        fprintf(f, ", \"verify_errors\": %" PRIu64, w->verify_errors);
        if (w->have_tcp) {
            fprintf(f, ",\n     \"tcp\": {");
            if (o->lat)
                json_lat(f, &w->tcp_lat, w->tcp_lo, w->tcp_hi);
            else
                json_bw(f, &w->tcp_bw, w->tcp_lo, w->tcp_hi, perf_mb(o));
            fprintf(f, "}, \"ratio\": %.4f", w->ratio);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
}

void perf_out_stats(FILE *f, const char *who, const struct perf_ep *e)
{
    if (!e->have_stats)
        return;
    char prefix[32], text[1024];
    snprintf(prefix, sizeof prefix, " %s stats: ", who);
    iwarp_api_stats_str(&e->stats, prefix, text, sizeof text);
    fputs(text, f);
    fflush(f);
}
