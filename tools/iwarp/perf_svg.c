/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp perf --plot: a hand-written SVG line chart against message size (log2 axis):
 * bandwidth (average, and the TCP baseline) or latency (typical and 99th percentile, and the
 * TCP baseline's typical).
 */
#include <errno.h>
#include <string.h>

#include "perf.h"

enum { W = 760, H = 460, ML = 80, MR = 190, MT = 50, MB = 60, NSERIES = 3 };

struct series {
    const char *name, *color;
    bool dashed;
    double y[PERF_MAX_SIZES];
};

static double log2u(uint32_t v)
{
    double l = 0;
    while (v > 1) {
        v >>= 1;
        l += 1;
    }
    return l;
}

/* log2 of size with a fraction for sizes between powers of two. */
static double xlog(uint32_t size)
{
    double l = log2u(size);
    double base = (double)((uint32_t)1 << (uint32_t)l);
    return l + ((double)size - base) / base;
}

/* A round axis maximum at or above v. */
static double nice_max(double v)
{
    double step = 1e-6;
    while (step * 10 < v)
        step *= 10;
    for (int m = 1; m <= 10; m++)
        if (step * m >= v)
            return step * m;
    return step * 10;
}

static void size_label(char *out, size_t n, uint32_t s)
{
    if (s >= (1u << 20) && s % (1u << 20) == 0)
        snprintf(out, n, "%uM", s >> 20);
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(out, n, "%uK", s >> 10);
    else
        snprintf(out, n, "%u", s);
}

/*
 * Write the chart of r to path. Returns 0 or a negative IWARP_ERR_* (IWARP_ERR_IO when the file
 * cannot be written).
 */
int perf_svg_write(const char *path, const struct perf_report *r)
{
    const struct perf_opts *o = r->o;
    char transport[64];
    perf_out_transport(o, transport, sizeof transport);
    struct series s[NSERIES];
    int ns = 0;
    memset(s, 0, sizeof s);
    s[ns].name = o->lat ? "libiwarp typical" : "libiwarp average";
    s[ns++].color = "#1f77b4";
    if (o->lat) {
        s[ns].name = "libiwarp 99%";
        s[ns].color = "#1f77b4";
        s[ns++].dashed = true;
    }
    bool tcp = r->nrows && r->rows[0].have_tcp;
    if (tcp) {
        s[ns].name = o->lat ? "plain TCP typical" : "plain TCP average";
        s[ns++].color = "#d62728";
    }
    double ymax = 0;
    for (uint32_t i = 0; i < r->nrows; i++) {
        const struct perf_row *w = &r->rows[i];
        int k = 0;
        s[k++].y[i] = o->lat ? w->lat.typical : w->bw.avg / perf_mb(o);
        if (o->lat)
            s[k++].y[i] = w->lat.p99;
        if (tcp)
            s[k].y[i] = o->lat ? w->tcp_lat.typical : w->tcp_bw.avg / perf_mb(o);
        for (int j = 0; j < ns; j++)
            ymax = s[j].y[i] > ymax ? s[j].y[i] : ymax;
    }
    ymax = nice_max(ymax > 0 ? ymax : 1);
    double x0 = r->nrows ? xlog(r->rows[0].size) : 1,
           x1 = r->nrows ? xlog(r->rows[r->nrows - 1].size) : 2;
    if (x1 - x0 < 1) {
        x0 -= 1;
        x1 += 1;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return IWARP_ERR_IO;
    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(x) (ML + ((x)-x0) / (x1 - x0) * pw)
#define PY(y) (MT + ph - (y) / ymax * ph)
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<title>iwarp perf: %s %s</title>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H, perf_op_title(o->op), o->lat ? "latency" : "bandwidth");
    fprintf(f,
            "<text x=\"%d\" y=\"24\" font-size=\"15\" font-weight=\"bold\">%s %s, libiwarp "
            "(%s, %s, %u pass%s, medians)</text>\n",
            ML, perf_op_title(o->op), o->lat ? "latency" : "bandwidth", transport,
            o->busy_poll ? "busy-poll" : "events", o->passes, o->passes > 1 ? "es" : "");
    /* axes and grid */
    for (int t = 0; t <= 5; t++) {
        double y = ymax * t / 5;
        fprintf(f,
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                ML, PY(y), ML + pw, PY(y), ML - 6, PY(y) + 4, y);
    }
    uint32_t every = r->nrows > 12 ? 2 : 1;
    for (uint32_t i = 0; i < r->nrows; i += every) {
        char lab[16];
        size_label(lab, sizeof lab, r->rows[i].size);
        double x = PX(xlog(r->rows[i].size));
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, MT, x, MT + ph, x, MT + ph + 18, lab);
    }
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"black\"/>\n"
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">message size [octets]</text>\n"
            "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">"
            "%s</text>\n",
            ML, MT, pw, ph, ML + pw / 2, H - 14, MT + ph / 2, MT + ph / 2,
            o->lat ? (o->op == PERF_OP_READ ? "latency [us], whole Read" : "latency [us], RTT/2")
            : o->units == PERF_UNITS_PERFTEST ? "bandwidth [MB/s, 2^20 octets/s]"
                                              : "bandwidth [MB/s, 10^6 octets/s]");
    /* series and legend */
    for (int j = 0; j < ns; j++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                s[j].color, s[j].dashed ? " stroke-dasharray=\"6 4\"" : "");
        for (uint32_t i = 0; i < r->nrows; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(xlog(r->rows[i].size)), PY(s[j].y[i]));
        fprintf(f, "\"/>\n");
        for (uint32_t i = 0; i < r->nrows; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                    PX(xlog(r->rows[i].size)), PY(s[j].y[i]), s[j].color);
        double ly = MT + 10 + 20 * j;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"%s/>\n<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                ML + pw + 12, ly, ML + pw + 36, ly, s[j].color,
                s[j].dashed ? " stroke-dasharray=\"6 4\"" : "", ML + pw + 42, ly + 4, s[j].name);
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return IWARP_ERR_IO;
    return 0;
}
