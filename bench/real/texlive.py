"""Real PDFs for benchmarks: every PDF of Debian's texlive-pictures-doc (491 PDFs, 12,555 pages;
the longest, pgfmanual, has 1,321), fetched once with `apt-get download`, unpacked with
`dpkg-deb -x` and kept, flattened into one directory, in the cache."""
import glob, os, shutil, subprocess, tempfile


def texlive_pdfs(cache):
    """The PDFs' paths, sorted; downloads and unpacks the package the first time."""
    pdfs = os.path.join(cache, "texlive-pictures-doc")
    if not os.path.isdir(pdfs):
        os.makedirs(cache, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as work:
            subprocess.run(["apt-get", "download", "texlive-pictures-doc"], cwd=work, check=True,
                           stderr=subprocess.DEVNULL)
            deb = glob.glob(os.path.join(work, "*.deb"))[0]
            subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work, "x")], check=True)
            staging = os.path.join(work, "pdfs")
            os.makedirs(staging)
            root = os.path.join(work, "x", "usr", "share", "doc", "texlive-doc")
            for folder, _, names in os.walk(root):
                for name in names:
                    if name.endswith(".pdf"):
                        relative = os.path.relpath(os.path.join(folder, name), root)
                        shutil.move(os.path.join(folder, name),
                                    os.path.join(staging, relative.replace("/", "_")))
            shutil.move(staging, pdfs)
    return sorted(glob.glob(os.path.join(pdfs, "*.pdf")))
